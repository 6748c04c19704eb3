// A run stage's view of the task folder (runner/run/checks/check-view.ts), on the real mounts where it runs:
// the kernel overlay (a root runner), fuse-overlayfs where installed, and the copy. Each view shows
// the task folder as the work left it; what a check writes, removes or renames lands in the view's
// own upper layer, never in the task folder or the next view; special files are gone from it and
// set-id bits do nothing there; dropping it unmounts and removes everything, a leftover mount too.
import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  dropCheckView,
  layersDir,
  makeCheckView,
  pruneCheckViews,
  type ViewKind,
} from "../../../runner/run/checks/check-view.ts";

const root = process.getuid?.() === 0;
const hasFuse = (() => {
  try {
    execFileSync("sh", ["-c", "command -v fuse-overlayfs"], { stdio: "ignore" });
    return existsSync("/dev/fuse");
  } catch {
    return false;
  }
})();
/** The kinds this machine mounts: the copy always; each other one where it can work here. */
export const kinds: ViewKind[] = [
  ...(root ? (["overlay"] as const) : []),
  ...(hasFuse ? (["fuse-overlayfs"] as const) : []),
  "copy",
];

let base = "";

function taskFolder(name: string): string {
  const task = join(base, name);
  mkdirSync(join(task, "src", "deep"), { recursive: true });
  writeFileSync(join(task, "src", "main.c"), "int main(void) { return 0; }\n");
  writeFileSync(join(task, "src", "deep", "data.txt"), "42\n");
  writeFileSync(join(task, "tool"), "#!/bin/sh\n", { mode: 0o4755 });
  execFileSync("mkfifo", [join(task, "pipe")]);
  return task;
}

/** The per-mount options of the mount at `dir` (mountinfo's sixth field). */
function mountOptions(dir: string): string[] {
  const line = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .find((l) => l.split(" ")[4] === dir);
  return line?.split(" ")[5]?.split(",") ?? [];
}

function listing(dir: string): string[] {
  return execFileSync("find", [dir, "-mindepth", "1", "-printf", "%P %y %m %s\n"], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean)
    .sort();
}

export function checkViewSuite(): void {
  describe("a check's view of the task folder", () => {
    base = mkdtempSync(join(tmpdir(), "scifi-check-view-"));
    afterAll(() => {
      for (const entry of readdirSync(base)) dropCheckView(join(base, entry));
      rmSync(base, { recursive: true, force: true });
    });

    it("the machine mounts the view it should: the kernel overlay when scifi runs as root", () => {
      // The Docker suites here run as root: the view they get must be copy-on-write, not the copy.
      if (root) expect(kinds[0]).toBe("overlay");
      expect(kinds).toContain("copy");
    });

    for (const kind of kinds) {
      it(`${kind}: shows the work's folder, keeps the check's changes to itself, and is dropped whole`, () => {
        const task = taskFolder(`task-${kind}`);
        const view = join(base, `view-${kind}`);
        const before = listing(task);
        const made = makeCheckView(task, view, { maxBytes: 1024 ** 3, kinds: [kind] });
        expect(made.kind).toBe(kind);
        expect(made.notUsed).toEqual([]);
        expect(readFileSync(join(view, "src", "deep", "data.txt"), "utf8")).toBe("42\n");
        // The FIFO is left out and listed; a set-id bit does nothing: the copy clears it, an
        // overlay is mounted nosuid.
        expect(made.skipped).toEqual(["pipe"]);
        expect(existsSync(join(view, "pipe"))).toBe(false);
        if (kind === "copy") expect(statSync(join(view, "tool")).mode & 0o7777).toBe(0o755);
        else expect(mountOptions(view)).toContain("nosuid");
        // A check writes, removes and renames in its view.
        writeFileSync(join(view, "src", "deep", "data.txt"), "0\n");
        writeFileSync(join(view, "planted.py"), "print('pass')\n");
        rmSync(join(view, "src", "main.c"));
        // mv, as a check's script would: fuse-overlayfs refuses rename(2) of a folder of the lower
        // layer (EXDEV), and mv then copies it.
        execFileSync("mv", [join(view, "src"), join(view, "moved")]);
        expect(readFileSync(join(view, "moved", "deep", "data.txt"), "utf8")).toBe("0\n");
        // The task folder is exactly as the work left it: nothing reached the lower layer.
        expect(listing(task)).toEqual(before);
        expect(readFileSync(join(task, "src", "deep", "data.txt"), "utf8")).toBe("42\n");
        expect(lstatSync(join(task, "pipe")).isFIFO()).toBe(true);
        // The next check's view is fresh: nothing of the first one is in it.
        const next = makeCheckView(task, view, { maxBytes: 1024 ** 3, kinds: [kind] });
        expect(next.kind).toBe(kind);
        expect(existsSync(join(view, "planted.py"))).toBe(false);
        expect(readFileSync(join(view, "src", "deep", "data.txt"), "utf8")).toBe("42\n");
        expect(readFileSync(join(view, "src", "main.c"), "utf8")).toContain("main");
        dropCheckView(view);
        expect(existsSync(view)).toBe(false);
        expect(existsSync(layersDir(view))).toBe(false);
        expect(readFileSync("/proc/self/mountinfo", "utf8")).not.toContain(view);
        expect(listing(task)).toEqual(before);
      });
    }

    for (const kind of kinds.filter((k) => k === "fuse-overlayfs" && !root)) {
      it(`${kind}: for an engine running as another user (Docker), only with user_allow_other`, () => {
        const task = taskFolder("task-other-user");
        const view = join(base, "view-other-user");
        const made = makeCheckView(task, view, { maxBytes: 1024 ** 3, engineIsOtherUser: true });
        const allowed = /^\s*user_allow_other\s*$/m.test(
          existsSync("/etc/fuse.conf") ? readFileSync("/etc/fuse.conf", "utf8") : "",
        );
        if (allowed) {
          expect(made.kind).toBe(kind);
          expect(readFileSync("/proc/self/mountinfo", "utf8")).toMatch(/allow_other/);
        } else {
          expect(made.kind).toBe("copy");
          expect(made.notUsed.join()).toContain("user_allow_other");
        }
        dropCheckView(view);
      });
    }

    for (const kind of kinds.filter((k) => k !== "copy")) {
      it(`${kind}: scifi sandbox prune unmounts the views of dead runs, never a live run's`, () => {
        const task = taskFolder(`task-prune-${kind}`);
        const home = join(base, `home-${kind}`);
        const lock = (runId: string, pid: number) =>
          writeFileSync(
            join(home, "runs", runId, "run.lock"),
            JSON.stringify({ pid, host: hostname(), startedAt: new Date().toISOString() }),
          );
        for (const runId of ["dead", "live"]) {
          mkdirSync(join(home, "runs", runId), { recursive: true });
          // Both of a run's view folders: the running stage's and the next one's, made ready ahead.
          for (const folder of ["checks-copy", "checks-copy-2"]) {
            makeCheckView(task, join(home, "runs", runId, folder), { maxBytes: 1024 ** 3, kinds: [kind] });
          }
        }
        // Not a view folder of a run: left alone.
        makeCheckView(task, join(home, "runs", "dead", "checks-copy-3"), {
          maxBytes: 1024 ** 3,
          kinds: [kind],
        });
        // A pid no process has (past pid_max), and this test's own.
        lock("dead", 2 ** 22 + 1);
        lock("live", process.pid);
        const removed = pruneCheckViews(home);
        expect(removed.sort()).toEqual([
          join(home, "runs", "dead", "checks-copy"),
          join(home, "runs", "dead", "checks-copy-2"),
        ]);
        expect(readFileSync("/proc/self/mountinfo", "utf8")).toContain(
          join(home, "runs", "dead", "checks-copy-3"),
        );
        dropCheckView(join(home, "runs", "dead", "checks-copy-3"));
        dropCheckView(join(home, "runs", "live", "checks-copy-2"));
        const mounts = readFileSync("/proc/self/mountinfo", "utf8");
        expect(mounts).not.toContain(join(home, "runs", "dead", "checks-copy"));
        expect(existsSync(join(home, "runs", "dead", "checks-copy"))).toBe(false);
        expect(mounts).toContain(join(home, "runs", "live", "checks-copy"));
        expect(readFileSync(join(home, "runs", "live", "checks-copy", "src", "main.c"), "utf8")).toContain(
          "main",
        );
        dropCheckView(join(home, "runs", "live", "checks-copy"));
      });
    }

    it("scifi sandbox prune removes what a dead run's checks left unmounted (copy views, asset folders), never a live run's", () => {
      const task = taskFolder("task-prune-copies");
      const home = join(base, "home-copies");
      for (const [runId, pid] of [
        ["dead", 2 ** 22 + 1],
        ["live", process.pid],
      ] as const) {
        mkdirSync(join(home, "runs", runId), { recursive: true });
        writeFileSync(
          join(home, "runs", runId, "run.lock"),
          JSON.stringify({ pid, host: hostname(), startedAt: new Date().toISOString() }),
        );
        for (const folder of ["checks-copy", "checks-copy-2"]) {
          expect(
            makeCheckView(task, join(home, "runs", runId, folder), { maxBytes: 1024 ** 3, kinds: ["copy"] })
              .kind,
          ).toBe("copy");
        }
        mkdirSync(join(home, "runs", runId, "check-assets-2", "checks"), { recursive: true });
      }
      // A run that ended (no lock at all) left an asset folder: removed too.
      mkdirSync(join(home, "runs", "ended", "check-assets"), { recursive: true });
      const removed = pruneCheckViews(home);
      expect(removed.sort()).toEqual(
        [
          join(home, "runs", "dead", "check-assets-2"),
          join(home, "runs", "dead", "checks-copy"),
          join(home, "runs", "dead", "checks-copy-2"),
          join(home, "runs", "ended", "check-assets"),
        ].sort(),
      );
      for (const dir of removed) expect(existsSync(dir)).toBe(false);
      for (const folder of ["checks-copy", "checks-copy-2", "check-assets-2"]) {
        expect(existsSync(join(home, "runs", "live", folder))).toBe(true);
      }
      expect(existsSync(join(home, "runs", "dead", "run.lock"))).toBe(true);
    });

    it("falls back to the copy, saying why, when no overlay can be mounted", () => {
      const task = taskFolder("task-fallback");
      // A comma in the path cannot be carried in mount options: every overlay kind is refused.
      const view = join(base, "view,fallback");
      const made = makeCheckView(task, view, {
        maxBytes: 1024 ** 3,
        kinds: ["overlay", "fuse-overlayfs", "copy"],
      });
      expect(made.kind).toBe("copy");
      // A runner that is not root never tries the kernel overlay, and does not say so.
      expect(made.notUsed.map((why) => why.split(":")[0])).toEqual([
        ...(root ? ["overlay"] : []),
        "fuse-overlayfs",
      ]);
      expect(readFileSync(join(view, "src", "deep", "data.txt"), "utf8")).toBe("42\n");
      expect(made.skipped).toEqual(["pipe"]);
      dropCheckView(view);
      expect(existsSync(view)).toBe(false);
    });

    for (const kind of kinds.filter((k) => k !== "copy")) {
      it(`${kind}: a folder chain past PATH_MAX in the task folder`, () => {
        const task = taskFolder(`task-deep-${kind}`);
        execFileSync("perl", [
          "-e",
          'chdir $ARGV[0] or die; for (1..2100) { mkdir "d" or die; chdir "d" or die }',
          task,
        ]);
        const view = join(base, `view-deep-${kind}`);
        const made = makeCheckView(task, view, { maxBytes: 1024 ** 3, kinds: [kind, "copy"] });
        if (kind === "overlay") {
          // The kernel names entries by their dentries: the chain is in the view as in the folder.
          expect(made.kind).toBe("overlay");
          expect(made.skipped).toEqual(["pipe"]);
        } else {
          // fuse-overlayfs names them by their path: the copy is used, which leaves the chain out.
          expect(made.kind).toBe("copy");
          expect(made.notUsed.join()).toContain("too long for fuse-overlayfs");
          expect(made.skipped.some((p) => p.includes("too long to copy"))).toBe(true);
        }
        dropCheckView(view);
        expect(existsSync(view)).toBe(false);
      });
    }

    for (const kind of kinds.filter((k) => k !== "copy")) {
      it(`${kind}: a view left mounted by a run that died is unmounted by the next view at its path`, () => {
        const task = taskFolder(`task-leftover-${kind}`);
        const view = join(base, `view-leftover-${kind}`);
        makeCheckView(task, view, { maxBytes: 1024 ** 3, kinds: [kind] });
        writeFileSync(join(view, "left.txt"), "from the dead run\n");
        // No drop: the process "died". The next run stage's view at the same path starts clean.
        const next = makeCheckView(task, view, { maxBytes: 1024 ** 3, kinds: [kind] });
        expect(next.kind).toBe(kind);
        expect(existsSync(join(view, "left.txt"))).toBe(false);
        const mounts = readFileSync("/proc/self/mountinfo", "utf8")
          .split("\n")
          .filter((l) => l.includes(view));
        expect(mounts).toHaveLength(1);
        dropCheckView(view);
      });
    }
  });
}
