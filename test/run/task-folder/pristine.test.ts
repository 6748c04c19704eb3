// The runner's pristine copies: what restorePristine finds and repairs in a task folder the agent
// had, without following any link (runner/run/task-folder/pristine.ts), and the grant comparison (grant.ts).

import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { grantDifferences } from "../../../runner/run/gates/grant.ts";
import {
  capturePristine,
  deliverableLinks,
  hideAssets,
  restorePristine,
} from "../../../runner/run/task-folder/pristine.ts";
import type { PristineSet } from "../../../runner/run-folder/state.ts";
import { taskFolderSpec } from "../../helpers/spec.ts";

let root: string;
let task: string;
let copies: string;
let set: PristineSet;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "scifi-pristine-"));
  task = join(root, "task");
  copies = join(root, "pristine");
  mkdirSync(join(task, "checks"), { recursive: true });
  mkdirSync(join(task, "src"));
  writeFileSync(join(task, "task.md"), "# the SAM\n");
  writeFileSync(join(task, "checks", "check.py"), "import json\nprint('ok')\n");
  writeFileSync(join(task, "checks", "ref.txt"), "SECRET-REFERENCE-42\n");
  writeFileSync(join(task, "src", "main.c"), "int main(){}\n");
  set = capturePristine(
    task,
    [
      { rel: "task.md", kind: "sam", hidden: false },
      { rel: "checks/check.py", kind: "asset", hidden: false },
      { rel: "checks/ref.txt", kind: "asset", hidden: true },
    ],
    copies,
  );
});

describe("capturePristine", () => {
  it("copies and hashes every file, and finds the folders that hold only assets", () => {
    expect(set.files.map((f) => f.rel)).toEqual(["task.md", "checks/check.py", "checks/ref.txt"]);
    expect(readFileSync(join(copies, "checks", "ref.txt"), "utf8")).toBe("SECRET-REFERENCE-42\n");
    expect(set.folders).toEqual(["checks"]);
  });

  it("refuses an asset that is a symlink at start (nothing is followed)", () => {
    symlinkSync("/etc/hostname", join(task, "checks", "link.txt"));
    expect(() =>
      capturePristine(task, [{ rel: "checks/link.txt", kind: "asset", hidden: false }], join(root, "p2")),
    ).toThrow(/symbolic link/);
  });
});

describe("restorePristine", () => {
  it("an untouched folder: nothing to report", () => {
    expect(restorePristine(task, copies, set, false)).toEqual({ tampering: [], removed: [], caches: [] });
  });

  it("changed content is tampering, and the file is put back", () => {
    chmodSync(join(task, "checks", "check.py"), 0o644);
    writeFileSync(join(task, "checks", "check.py"), "import sys; sys.exit(0)\n");
    const report = restorePristine(task, copies, set, false);
    expect(report.tampering).toEqual([
      { file: "checks/check.py", problem: expect.stringContaining("changed content") },
    ]);
    expect(readFileSync(join(task, "checks", "check.py"), "utf8")).toBe("import json\nprint('ok')\n");
  });

  it("an asset replaced by a symlink, a FIFO or a folder is tampering and is replaced by the file", () => {
    for (const [make, word] of [
      [(p: string) => symlinkSync("/tmp/good.py", p), "symbolic link"],
      [(p: string) => execFileSync("mkfifo", [p]), "FIFO"],
      [(p: string) => mkdirSync(p), "folder"],
    ] as const) {
      const path = join(task, "checks", "check.py");
      execFileSync("rm", ["-rf", path]);
      make(path);
      const report = restorePristine(task, copies, set, false);
      expect(report.tampering[0]?.problem).toContain(word);
      expect(lstatSync(path).isFile()).toBe(true);
    }
  });

  it("a renamed asset folder replaced by links is tampering; the runner's folder is a real one again", () => {
    renameSync(join(task, "checks"), join(task, "checks.orig"));
    symlinkSync(join(task, "checks.orig"), join(task, "checks"));
    const report = restorePristine(task, copies, set, false);
    expect(report.tampering[0]).toEqual({
      file: "checks",
      problem: expect.stringContaining("symbolic link"),
    });
    expect(lstatSync(join(task, "checks")).isDirectory()).toBe(true);
    expect(readFileSync(join(task, "checks", "check.py"), "utf8")).toBe("import json\nprint('ok')\n");
    expect(existsSync(join(task, "checks.orig", "check.py"))).toBe(true); // the link's target untouched
  });

  it("a folder of symlinks in place of the asset folder: each asset is tampering", () => {
    renameSync(join(task, "checks"), join(task, "checks.orig"));
    mkdirSync(join(task, "checks"));
    symlinkSync("../checks.orig/check.py", join(task, "checks", "check.py"));
    const report = restorePristine(task, copies, set, false);
    expect(report.tampering.map((t) => t.file)).toContain("checks/check.py");
    expect(lstatSync(join(task, "checks", "check.py")).isFile()).toBe(true);
  });

  it("files the agent added to an asset folder are removed and reported, not tampering", () => {
    writeFileSync(join(task, "checks", "json.py"), "import sys; sys.exit(0)\n");
    mkdirSync(join(task, "checks", "__pycache__"));
    const report = restorePristine(task, copies, set, false);
    expect(report.tampering).toEqual([]);
    expect(report.removed.sort()).toEqual(["checks/__pycache__", "checks/json.py"]);
    expect(existsSync(join(task, "checks", "json.py"))).toBe(false);
  });

  it("a file the agent added to an asset folder under a name that is not UTF-8 is removed too", () => {
    const name = Buffer.concat([
      Buffer.from(join(task, "checks", "x")),
      Buffer.from([0xff]),
      Buffer.from(".txt"),
    ]);
    writeFileSync(name, "planted\n");
    const report = restorePristine(task, copies, set, false);
    expect(report.removed).toEqual(["checks/x\\xff.txt"]);
    expect(existsSync(name)).toBe(false);
  });

  it("a hard link to an asset is tampering (its content could change through the twin)", () => {
    execFileSync("ln", [join(task, "checks", "check.py"), join(task, "twin.py")]);
    const report = restorePristine(task, copies, set, false);
    expect(report.tampering[0]?.problem).toContain("hard links");
    expect(lstatSync(join(task, "checks", "check.py")).nlink).toBe(1);
  });

  it("hidden assets leave the task folder and come back only when asked for", () => {
    hideAssets(task, set);
    expect(existsSync(join(task, "checks", "ref.txt"))).toBe(false);
    expect(restorePristine(task, copies, set, false)).toEqual({ tampering: [], removed: [], caches: [] });
    expect(existsSync(join(task, "checks", "ref.txt"))).toBe(false);
    restorePristine(task, copies, set, true);
    expect(readFileSync(join(task, "checks", "ref.txt"), "utf8")).toBe("SECRET-REFERENCE-42\n");
  });

  it("a file the agent put at a hidden asset's path is replaced by the real one and reported", () => {
    hideAssets(task, set);
    writeFileSync(join(task, "checks", "ref.txt"), "my own answer\n");
    const report = restorePristine(task, copies, set, true);
    expect(report.removed).toContain("checks/ref.txt");
    expect(readFileSync(join(task, "checks", "ref.txt"), "utf8")).toBe("SECRET-REFERENCE-42\n");
  });
});

describe("deliverableLinks", () => {
  it("reports links out of the task folder and dangling links, not links that stay inside", async () => {
    symlinkSync("/tmp/good.out", join(task, "result.txt"));
    symlinkSync("../../etc/passwd", join(task, "src", "up.txt"));
    symlinkSync("missing.c", join(task, "src", "gone.c"));
    symlinkSync("main.c", join(task, "src", "alias.c"));
    symlinkSync("/task/src/main.c", join(task, "abs.c"));
    expect((await deliverableLinks(task)).sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: "result.txt", target: "/tmp/good.out", problem: "outside" },
      { path: "src/gone.c", target: "missing.c", problem: "dangling" },
      { path: "src/up.txt", target: "../../etc/passwd", problem: "outside" },
    ]);
  });
});

describe("deliverableLinks sees every entry", () => {
  it("a link named \\xff, one in a folder named \\xff and one 300 levels down are all reported", async () => {
    const ff = Buffer.from([0xff]);
    const at = (...parts: Buffer[]) =>
      Buffer.concat([Buffer.from(task), ...parts.flatMap((p) => [Buffer.from("/"), p])]);
    symlinkSync("/etc/passwd", at(ff));
    mkdirSync(at(Buffer.concat([Buffer.from("d"), ff])));
    symlinkSync(
      Buffer.concat([Buffer.from("../"), ff, Buffer.from("-missing")]),
      at(Buffer.concat([Buffer.from("d"), ff]), Buffer.from("l")),
    );
    let dir = task;
    for (let i = 0; i < 300; i++) {
      dir = join(dir, "n");
      mkdirSync(dir);
    }
    symlinkSync("/root", join(dir, "deep"));
    const links = (await deliverableLinks(task)).sort((a, b) => a.path.localeCompare(b.path));
    expect(links).toEqual([
      { path: "\\xff", target: "/etc/passwd", problem: "outside" },
      { path: "d\\xff/l", target: "../\\xff-missing", problem: "dangling" },
      { path: `${Array(300).fill("n").join("/")}/deep`, target: "/root", problem: "outside" },
    ]);
  });
});

describe("grantDifferences", () => {
  it("names a changed mount source and a changed limit; names and labels do not count", () => {
    const recorded = taskFolderSpec({ runId: "r1", image: "scifi-sci:local", taskDir: task });
    const fresh = {
      ...recorded,
      runId: "other",
      labels: { other: "x" },
      memoryBytes: recorded.memoryBytes * 2,
      mounts: recorded.mounts.map((m, i) => (i === 0 ? { ...m, source: "/etc" } : m)),
    };
    const changes = grantDifferences(recorded, fresh);
    expect(changes).toContain(`new mount /etc -> /task (rw)`);
    expect(changes.some((c) => c.startsWith("memoryBytes was"))).toBe(true);
    expect(changes.some((c) => c.includes("runId") || c.includes("labels"))).toBe(false);
    expect(grantDifferences(recorded, { ...recorded, runId: "x" })).toEqual([]);
  });
});
