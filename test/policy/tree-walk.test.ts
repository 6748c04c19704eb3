// The task-folder walks see every entry (issue 26 point 4): names that are not UTF-8, trees deeper
// than the folders a walk keeps open (300 levels) with the setuid sweep, the quota and the snapshot
// reaching the bottom, and no silent skip (a folder the walk may not enter fails it at the end, after
// everything else was done). Real files, no engine.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  realpathSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import {
  clearPrivilegeBits,
  MAX_OPEN_LEVELS,
  measureTaskFolder,
  showPath,
  WalkIncomplete,
  walkTree,
} from "../../runner/policy/tree-walk.ts";
import { compareSnapshots, snapshotTaskFolder } from "../../runner/report/changes.ts";

const MiB = 1024 ** 2;
let task: string;

beforeEach(() => {
  task = join(realpathSync(mkdtempSync(join(tmpdir(), "scifi-walk-"))), "task");
  mkdirSync(task);
});

/** A path under `task` as bytes (names that are not UTF-8 cannot be strings). */
function bytesPath(...parts: (string | Buffer)[]): Buffer {
  return Buffer.concat(
    [Buffer.from(task), ...parts.map((p) => (typeof p === "string" ? Buffer.from(p) : p))].flatMap((p, i) =>
      i === 0 ? [p] : [Buffer.from("/"), p],
    ),
  );
}

const FF = Buffer.from([0xff]);

/** `levels` nested folders `l` under the task folder; the deepest one's path as a string. */
function deepTree(levels: number): string {
  // mkdir -p of 300 levels is longer than PATH_MAX for no name here, but build it stepwise anyway.
  let dir = task;
  for (let i = 0; i < levels; i++) {
    dir = join(dir, "l");
    mkdirSync(dir);
  }
  return dir;
}

function openDescriptors(): number {
  return readdirSync("/proc/self/fd").length;
}

describe("names as bytes", () => {
  it("showPath keeps UTF-8, escapes other bytes, backslashes and controls, and never shows two names the same", () => {
    expect(showPath(Buffer.from("données/ß.txt"))).toBe("données/ß.txt");
    expect(showPath(FF)).toBe("\\xff");
    expect(showPath(Buffer.from("\\xff"))).toBe("\\\\xff");
    expect(showPath(Buffer.from("a\nb"))).toBe("a\\x0ab");
    expect(showPath(Buffer.from([0xc3]))).toBe("\\xc3"); // a cut sequence
    expect(showPath(Buffer.from([0xed, 0xa0, 0x80]))).toBe("\\xed\\xa0\\x80"); // a surrogate
  });

  it("a folder named \\xff: the sweep clears a setuid file in it, the quota counts its 20 MiB, the snapshot lists it", async () => {
    mkdirSync(bytesPath(FF));
    writeFileSync(bytesPath(FF, "sh"), "#!/bin/sh\n");
    chmodSync(bytesPath(FF, "sh"), 0o4755);
    writeFileSync(bytesPath(FF, Buffer.concat([Buffer.from("big"), FF])), Buffer.alloc(20 * MiB, 1));
    writeFileSync(join(task, "\\xff"), "a literal backslash name, not the folder");

    expect((await measureTaskFolder(task)).allocatedBytes).toBeGreaterThanOrEqual(20 * MiB);
    const snapshot = await snapshotTaskFolder(task, "start");
    expect(Object.keys(snapshot.files).sort()).toEqual(["\\\\xff", "\\xff/big\\xff", "\\xff/sh"]);
    expect(snapshot.files["\\xff/sh"]?.text).toBe("#!/bin/sh\n");

    expect(await clearPrivilegeBits(task)).toEqual(["\\xff/sh"]);
    expect(lstatSync(bytesPath(FF, "sh")).mode & 0o7777).toBe(0o755);
  });
});

describe("any depth", () => {
  it(`a 300-level tree (more than the ${MAX_OPEN_LEVELS} folders a walk keeps open): every walk reaches the bottom, descriptors stay bounded`, async () => {
    expect(300).toBeGreaterThan(MAX_OPEN_LEVELS);
    const bottom = deepTree(300);
    // Relative opens: the bottom's absolute path is longer than some tools like, not than Linux's limit.
    writeFileSync(join(bottom, "suid"), "x");
    chmodSync(join(bottom, "suid"), 0o4755);
    writeFileSync(join(bottom, "data"), Buffer.alloc(2 * MiB, 1));
    // A sibling after the deep branch: the walk comes back up through reopened folders.
    mkdirSync(join(task, "l", "l", "z"));
    writeFileSync(join(task, "l", "l", "z", "sgid"), "x");
    chmodSync(join(task, "l", "l", "z", "sgid"), 0o2755);
    writeFileSync(join(task, "zz"), "x");
    chmodSync(join(task, "zz"), 0o4700);

    const before = openDescriptors();
    let deepest = 0;
    let peak = 0;
    await walkTree(task, (entry) => {
      deepest = Math.max(deepest, entry.depth);
      peak = Math.max(peak, openDescriptors());
      return undefined;
    });
    expect(deepest).toBe(301);
    expect(peak - before).toBeLessThanOrEqual(2 * MAX_OPEN_LEVELS + 4);
    expect(openDescriptors()).toBe(before);

    const usage = await measureTaskFolder(task);
    expect(usage.entries).toBe(1 + 300 + 2 + 2 + 1); // the root, the chain, its files, z and sgid, zz
    expect(usage.allocatedBytes).toBeGreaterThanOrEqual(2 * MiB);
    const cleared = await clearPrivilegeBits(task);
    expect(cleared).toHaveLength(3);
    expect(cleared).toContain(`${Array(300).fill("l").join("/")}/suid`);
    expect(cleared).toEqual(expect.arrayContaining(["l/l/z/sgid", "zz"]));
    expect(lstatSync(join(bottom, "suid")).mode & 0o7777).toBe(0o755);
    expect(lstatSync(join(task, "l", "l", "z", "sgid")).mode & 0o7777).toBe(0o755);
    expect(openDescriptors()).toBe(before);
  });

  it("a snapshot lists a file 300 levels down and sees it change", async () => {
    const bottom = deepTree(300);
    writeFileSync(join(bottom, "f"), "deep\n");
    const start = await snapshotTaskFolder(task, "start");
    expect(start.files[`${Array(300).fill("l").join("/")}/f`]?.text).toBe("deep\n");
    expect(start.partial).toBeUndefined();
    writeFileSync(join(bottom, "f"), "changed\n");
    const end = await snapshotTaskFolder(task, "end", { since: start });
    expect(compareSnapshots(start, end).map((c) => [c.path.slice(-3), c.kind])).toEqual([["l/f", "changed"]]);
  });

  it("a path longer than the snapshot's limit is not listed, and the snapshot says so", async () => {
    // 2,100 levels: a path of 4,200 bytes, built relative (longer than PATH_MAX as one path).
    const build = `const fs = require("node:fs"); for (let i = 0; i < 2100; i++) { fs.mkdirSync("l"); process.chdir("l"); } fs.writeFileSync("f", "x");`;
    execFileSync(process.execPath, ["-e", build], { cwd: task });
    writeFileSync(join(task, "top"), "x");
    const snapshot = await snapshotTaskFolder(task, "start");
    expect(Object.keys(snapshot.files)).toEqual(["top"]);
    expect(snapshot.partial).toMatch(/paths longer than 4096 bytes are not listed/);
    expect((await measureTaskFolder(task)).entries).toBe(1 + 2100 + 1 + 1);
  });
});

describe("no silent skip", () => {
  it("a folder the walk may not enter fails it at the end, after everything else was done", async () => {
    deepTree(5);
    writeFileSync(join(task, "zz"), "x");
    chmodSync(join(task, "zz"), 0o4755);
    const error = await clearPrivilegeBits(task, { maxDepth: 3 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WalkIncomplete);
    expect((error as WalkIncomplete).problems).toEqual(["folders nest deeper than 3 levels (l/l/l/l)"]);
    expect(lstatSync(join(task, "zz")).mode & 0o7777).toBe(0o755); // done before it failed
  });

  // As root the folder stays enterable; as a user the walk must open it up: counted either way.
  it("a folder of this user's made unreadable is opened up, not skipped", async () => {
    mkdirSync(join(task, "hidden"));
    writeFileSync(join(task, "hidden", "f"), Buffer.alloc(MiB, 1));
    chmodSync(join(task, "hidden"), 0o000);
    expect((await measureTaskFolder(task)).allocatedBytes).toBeGreaterThanOrEqual(MiB);
  });

  it("FIFOs are listed, never opened (the walk does not block on one)", async () => {
    execFileSync("mkfifo", [join(task, "pipe")]);
    const fd = openSync(task, "r");
    closeSync(fd);
    const snapshot = await snapshotTaskFolder(task, "start");
    expect(snapshot.files.pipe?.kind).toBe("other");
  });
});
