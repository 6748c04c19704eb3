// Host-side task-folder access: never follows a symlink (final or intermediate), refuses FIFOs and
// hard-linked files, '..'; routes container paths by the deepest mount. Real files, no engine needed.
import { execFileSync } from "node:child_process";
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { HostPathRefused, readTaskFile, routePath, writeTaskFile } from "../../runner/policy/host-paths.ts";

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
