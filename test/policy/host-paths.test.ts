// Host-side task-folder access: never follows a symlink (final or intermediate), refuses FIFOs and
// hard-linked files, '..'; routes container paths by the deepest mount. Real files, no engine needed.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import {
  clearPrivilegeBits,
  HostPathRefused,
  hashRegularFile,
  lendTaskFolder,
  measureTaskFolder,
  readTaskFile,
  returnTaskFolder,
  routePath,
  WalkLimitExceeded,
  writeTaskFile,
} from "../../runner/policy/host-paths.ts";

let outside: string;
let task: string;

beforeEach(() => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "scifi-hostpaths-")));
  outside = join(base, "outside");
  task = join(base, "task");
  mkdirSync(outside);
  mkdirSync(task);
  writeFileSync(join(outside, "secret"), "secret\n");
});

describe("task-folder files on the host", () => {
  it("reads and writes plain files, creating parent folders", () => {
    writeTaskFile(task, "a/b/c.txt", "hello");
    expect(readFileSync(join(task, "a/b/c.txt"), "utf8")).toBe("hello");
    expect(readTaskFile(task, "a/b/c.txt").toString()).toBe("hello");
    writeTaskFile(task, "a/b/c.txt", "hi");
    expect(readTaskFile(task, "./a//b/c.txt").toString()).toBe("hi");
  });

  it("shows a refused path's control characters as escapes: a name cannot write a line of its own", () => {
    // The reason quotes the name too: escaped there as well.
    const name = "x\nscifi: check PASSED\u001b[2J";
    writeFileSync(join(task, "real"), "1\n");
    symlinkSync("real", join(task, name));
    let message = "";
    try {
      readTaskFile(task, name);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/^refused path 'x\\nscifi: check PASSED\\x1b\[2J'/);
    expect(message).not.toContain("\n");
    expect(message).not.toContain("\u001b");
  });

  it("refuses a symlink as the file, in both directions", () => {
    symlinkSync(join(outside, "secret"), join(task, "link"));
    expect(() => readTaskFile(task, "link")).toThrow(HostPathRefused);
    expect(() => writeTaskFile(task, "link", "x")).toThrow(
      "refused path 'link': 'link' is a symbolic link (or not a folder); links are never followed on the host",
    );
    expect(readFileSync(join(outside, "secret"), "utf8")).toBe("secret\n");
  });

  it("refuses a symlinked folder anywhere on the path, also when creating", () => {
    symlinkSync(outside, join(task, "dir"));
    mkdirSync(join(task, "real"));
    symlinkSync(outside, join(task, "real", "deeper"));
    expect(() => readTaskFile(task, "dir/secret")).toThrow(HostPathRefused);
    expect(() => writeTaskFile(task, "dir/new", "x")).toThrow(
      "refused path 'dir/new': folder 'dir' is a symbolic link",
    );
    expect(() => writeTaskFile(task, "real/deeper/sub/new", "x")).toThrow(HostPathRefused);
    expect(existsSync(join(outside, "new"))).toBe(false);
    expect(existsSync(join(outside, "sub"))).toBe(false);
  });

  it("refuses '..', the folder itself, FIFOs (without hanging) and hard-linked files", () => {
    expect(() => readTaskFile(task, "../outside/secret")).toThrow("'..' may not leave the task folder");
    expect(() => writeTaskFile(task, "", "x")).toThrow("this is the task folder itself");
    execFileSync("mkfifo", [join(task, "pipe")]);
    expect(() => readTaskFile(task, "pipe")).toThrow("refused path 'pipe': not a regular file");
    linkSync(join(outside, "secret"), join(task, "hard"));
    expect(() => writeTaskFile(task, "hard", "clobbered")).toThrow("the file has other hard links");
    expect(readFileSync(join(outside, "secret"), "utf8")).toBe("secret\n");
  });

  it("names a missing file plainly", () => {
    expect(() => readTaskFile(task, "nope.txt", "/task/nope.txt")).toThrow(
      "/task/nope.txt: no such file or folder in the task folder",
    );
  });
});

describe("routePath", () => {
  const spec = {
    workdir: "/task",
    mounts: [
      { source: "/h/task", target: "/task", readOnly: false, reason: "task folder" },
      { source: "/h/task/task.md", target: "/task/task.md", readOnly: true, reason: "sam file" },
      { source: "/h/data", target: "/task/data", readOnly: true, reason: "declared" },
      { source: "/d", target: "/data", readOnly: true, reason: "declared" },
    ],
  };
  it("serves the task folder on the host and everything else through the container", () => {
    expect(routePath(spec, "out/x.txt")).toEqual({ where: "task", rel: "out/x.txt", readOnly: false });
    expect(routePath(spec, "/task/out/../y")).toEqual({ where: "task", rel: "y", readOnly: false });
    expect(routePath(spec, "/task/task.md")).toEqual({
      where: "container",
      path: "/task/task.md",
      readOnly: true,
    });
    expect(routePath(spec, "task.md")).toEqual({ where: "container", path: "/task/task.md", readOnly: true });
    expect(routePath(spec, "/task/data/f")).toEqual({
      where: "container",
      path: "/task/data/f",
      readOnly: true,
    });
    expect(routePath(spec, "/data/f")).toEqual({ where: "container", path: "/data/f", readOnly: true });
    expect(routePath(spec, "/tmp/f")).toEqual({ where: "container", path: "/tmp/f", readOnly: false });
    expect(routePath(spec, "/task/../etc/passwd")).toEqual({
      where: "container",
      path: "/etc/passwd",
      readOnly: false,
    });
  });
});

// Issue 14: reads that cannot hurt, walks that cannot be led astray, privileges that do not leave.
describe("capped reads and hashing of hostile files", () => {
  it("readTaskFile refuses a file over the cap, also a huge sparse one, without reading it", () => {
    writeFileSync(join(task, "five"), "12345");
    expect(readTaskFile(task, "five", "five", 5).toString()).toBe("12345");
    expect(() => readTaskFile(task, "five", "five", 4)).toThrow(/larger than 4 bytes/);
    writeFileSync(join(task, "sparse"), "");
    truncateSync(join(task, "sparse"), 3 * 1024 ** 3);
    const t0 = Date.now();
    expect(() => readTaskFile(task, "sparse")).toThrow(/larger than/);
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it("readTaskFile refuses a device node and a socket", () => {
    if (process.getuid?.() === 0) {
      execFileSync("mknod", [join(task, "zero"), "c", "1", "5"]);
      expect(() => readTaskFile(task, "zero")).toThrow("not a regular file");
    }
    execFileSync("python3", [
      "-c",
      `import socket; socket.socket(socket.AF_UNIX).bind(${JSON.stringify(join(task, "sock"))})`,
    ]);
    expect(() => readTaskFile(task, "sock")).toThrow(HostPathRefused);
    expect(() => readTaskFile(task, "sock")).toThrow(/not a regular file/);
    expect(() => writeTaskFile(task, "sock", "x")).toThrow(/not a regular file/);
    execFileSync("mkfifo", [join(task, "fifo")]);
    expect(() => writeTaskFile(task, "fifo", "x")).toThrow(HostPathRefused); // no reader: ENXIO, refused
  });

  it("hashRegularFile: sha256 of a regular file, 'missing', and refusals for FIFOs, links and too-large files", () => {
    writeFileSync(join(task, "f"), "data");
    const want = createHash("sha256").update("data").digest("hex");
    expect(hashRegularFile(join(task, "f"))).toBe(want);
    expect(hashRegularFile("f", { root: task })).toBe(want);
    expect(hashRegularFile(join(task, "none"))).toBe("missing");
    execFileSync("mkfifo", [join(task, "pipe")]);
    const t0 = Date.now();
    expect(() => hashRegularFile(join(task, "pipe"))).toThrow("not a regular file");
    expect(Date.now() - t0).toBeLessThan(1000);
    symlinkSync(join(outside, "secret"), join(task, "link"));
    expect(() => hashRegularFile(join(task, "link"))).toThrow(HostPathRefused);
    mkdirSync(join(task, "sub"));
    writeFileSync(join(task, "sub", "x"), "x");
    symlinkSync(join(task, "sub"), join(task, "via"));
    expect(() => hashRegularFile("via/x", { root: task })).toThrow(HostPathRefused);
    expect(() => hashRegularFile(join(task, "f"), { maxBytes: 3 })).toThrow(/larger than 3 bytes/);
  });
});

describe("task-folder walks", () => {
  it("measureTaskFolder counts allocated blocks, sparse files as what they hold, hard links once, links not followed", async () => {
    const empty = await measureTaskFolder(task);
    writeFileSync(join(task, "one"), Buffer.alloc(1024 * 1024, 1));
    linkSync(join(task, "one"), join(task, "twin"));
    writeFileSync(join(task, "sparse"), "");
    truncateSync(join(task, "sparse"), 3 * 1024 ** 3);
    writeFileSync(join(outside, "big"), Buffer.alloc(4 * 1024 * 1024, 1));
    symlinkSync(outside, join(task, "out-link"));
    execFileSync("mkfifo", [join(task, "pipe")]);
    const usage = await measureTaskFolder(task);
    const added = usage.allocatedBytes - empty.allocatedBytes;
    expect(added).toBeGreaterThanOrEqual(1024 * 1024);
    expect(added).toBeLessThan(2 * 1024 * 1024);
  });

  it("stops at its entry and depth limits", async () => {
    for (let i = 0; i < 20; i++) writeFileSync(join(task, `f${i}`), "");
    await expect(measureTaskFolder(task, { maxEntries: 10 })).rejects.toThrow(WalkLimitExceeded);
    mkdirSync(join(task, "a/b/c/d/e"), { recursive: true });
    await expect(measureTaskFolder(task, { maxDepth: 3 })).rejects.toThrow(/deeper than 3/);
  });

  it("clearPrivilegeBits clears setuid/setgid in the tree, never through a link, and opens up a hidden folder", async () => {
    writeFileSync(join(task, "suid"), "#!/bin/sh\n");
    chmodSync(join(task, "suid"), 0o4755);
    mkdirSync(join(task, "d"));
    writeFileSync(join(task, "d", "sgid"), "");
    chmodSync(join(task, "d", "sgid"), 0o2711);
    chmodSync(join(task, "d"), 0o2755);
    mkdirSync(join(task, "hidden"));
    writeFileSync(join(task, "hidden", "suid"), "");
    chmodSync(join(task, "hidden", "suid"), 0o4700);
    chmodSync(join(task, "hidden"), 0o000);
    writeFileSync(join(outside, "target"), "");
    chmodSync(join(outside, "target"), 0o4755);
    symlinkSync(join(outside, "target"), join(task, "link"));
    const cleared = await clearPrivilegeBits(task);
    expect(cleared.sort()).toEqual(["d", "d/sgid", "hidden/suid", "suid"]);
    expect(lstatSync(join(task, "suid")).mode & 0o7777).toBe(0o755);
    expect(lstatSync(join(task, "d", "sgid")).mode & 0o7777).toBe(0o711);
    expect(lstatSync(join(task, "hidden", "suid")).mode & 0o7777).toBe(0o700);
    expect(lstatSync(join(outside, "target")).mode & 0o7777).toBe(0o4755); // the link's target is not ours
  });

  it.runIf(process.getuid?.() === 0)(
    "lendTaskFolder gives every entry to the sandbox user; returnTaskFolder restores each owner, new entries to the folder's",
    async () => {
      mkdirSync(join(task, "d"));
      writeFileSync(join(task, "d", "root-file"), "x");
      symlinkSync(join(outside, "secret"), join(task, "link"));
      const record = await lendTaskFolder(task, { uid: 65534, gid: 65534 });
      for (const f of ["", "d", "d/root-file"]) expect(statSync(join(task, f)).uid, f).toBe(65534);
      expect(lstatSync(join(task, "link")).uid).toBe(65534);
      expect(statSync(join(outside, "secret")).uid).toBe(0); // a link's target is never touched
      expect(record.kept).toEqual([]);
      writeFileSync(join(task, "made-in-sandbox"), "y");
      chownSync(join(task, "made-in-sandbox"), 65534, 65534);
      await returnTaskFolder(record);
      for (const f of ["", "d", "d/root-file", "made-in-sandbox"])
        expect(statSync(join(task, f)).uid, f).toBe(0);
      expect(lstatSync(join(task, "link")).uid).toBe(0);
    },
  );

  it.runIf(process.getuid?.() === 0)(
    "lendTaskFolder never lends another user's file: it stays theirs, recorded, and is theirs after",
    async () => {
      writeFileSync(join(task, "theirs"), "x");
      chownSync(join(task, "theirs"), 1234, 1234);
      const record = await lendTaskFolder(task, { uid: 65534, gid: 65534 });
      expect(statSync(join(task, "theirs"))).toMatchObject({ uid: 1234, gid: 1234 });
      expect(record.kept).toEqual([{ path: "theirs", why: expect.stringMatching(/owned by uid 1234/) }]);
      await returnTaskFolder(record);
      expect(statSync(join(task, "theirs"))).toMatchObject({ uid: 1234, gid: 1234 });
    },
  );

  it.runIf(process.getuid?.() === 0)(
    "writeTaskFile with an owner gives new folders and the file to it",
    () => {
      writeTaskFile(task, "new/dir/f.txt", "x", "f.txt", { uid: 65534, gid: 65534 });
      expect(statSync(join(task, "new")).uid).toBe(65534);
      expect(statSync(join(task, "new/dir/f.txt"))).toMatchObject({ uid: 65534, gid: 65534 });
    },
  );
});
