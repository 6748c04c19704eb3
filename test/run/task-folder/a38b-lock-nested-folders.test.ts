// Attack on issue 38's "one run per task folder" (runner/task-folder-lock.ts), found by attacker
// a38b. Fixed: runner/task-folder-lock.ts refuseNested.
// Doc promise: docs/loop.md "One run uses a task folder at a time: two would lend, restore and judge
// the same files at once (as root, the second would record the sandbox's uid as every file's
// owner ...)"; issue 38 point 3; README: a SAM's sub-SAM files live "in sub-folders" of its task
// folder, and each may be run on its own (`scifi run parent/sub/task.md`).
// What happened: the locks are keyed by the folder itself (device and inode; the real path), so a
// run of `parent/` (the SAM that names `sub/task.md` as a sub-SAM) and a run of `parent/sub/` (that
// sub-SAM run alone, or any SAM in a sub-folder) both take their locks and run at once. The parent
// run's sandbox holds `sub/` read-write: its agent writes the other run's deliverables while that
// run is checked and judged; both runs restore `sub/task.md` from their own pristine copies; and
// as root, a parent lent first leaves `sub/` owned by the sandbox uid, which the child's lend then
// records as the owners to give back (the folder left owned by uid 65534, the bug issue 38 names).
// Suggested fix: on taking a folder's lock, refuse when a live lock holds one of its ancestors or
// one of its descendants (e.g. keep the real path in each lock and compare prefixes in the
// runtime folder and the home's task-locks), naming the holder.
import { mkdirSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lockTaskFolder, refuseBusyTaskFolder, TaskFolderBusy } from "../../../runner/task-folder-lock.ts";

function folders(): { home: string; parent: string; child: string } {
  const root = mkdtempSync(join(tmpdir(), "scifi-a38b-nest-"));
  const parent = join(root, "project");
  const child = join(parent, "sub");
  mkdirSync(child, { recursive: true });
  return { home: join(root, "home"), parent, child };
}

/** The error a second lock gives, or undefined when it was taken (then released). */
function second(home: string, dir: string, runId: string): unknown {
  try {
    lockTaskFolder(home, dir, runId)();
    return undefined;
  } catch (error) {
    return error;
  }
}

describe("a38b: one run per task folder, for folders inside each other", () => {
  it("a run of a sub-folder is refused while a run holds the folder around it", () => {
    const { home, parent, child } = folders();
    const release = lockTaskFolder(home, parent, "run-parent");
    try {
      expect(second(home, child, "run-child"), "both runs hold sub/ at once").toBeInstanceOf(TaskFolderBusy);
    } finally {
      release();
    }
  });

  it("a run of the folder around it is refused while a run holds the sub-folder", () => {
    const { home, parent, child } = folders();
    const release = lockTaskFolder(home, child, "run-child");
    try {
      expect(second(home, parent, "run-parent"), "both runs hold sub/ at once").toBeInstanceOf(
        TaskFolderBusy,
      );
    } finally {
      release();
    }
  });

  it("names the run that holds the folder around it, and both folders", () => {
    const { home, parent, child } = folders();
    const release = lockTaskFolder(home, parent, "run-parent");
    try {
      const error = second(home, child, "run-child") as Error;
      expect(error.message).toContain("run run-parent");
      expect(error.message).toContain(`task folder ${child} is inside task folder ${parent}`);
    } finally {
      release();
    }
  });

  it("sees the nesting through a link to the sub-folder", () => {
    const { home, parent, child } = folders();
    const link = join(parent, "..", "alias");
    symlinkSync(child, link);
    const release = lockTaskFolder(home, link, "run-link");
    try {
      expect(second(home, parent, "run-parent")).toBeInstanceOf(TaskFolderBusy);
    } finally {
      release();
    }
  });

  it("a sibling folder, and the folder after its holder released it, can be taken", () => {
    const { home, parent, child } = folders();
    const sibling = join(parent, "other");
    mkdirSync(sibling);
    const release = lockTaskFolder(home, child, "run-child");
    try {
      expect(second(home, sibling, "run-sibling")).toBeUndefined();
    } finally {
      release();
    }
    expect(second(home, parent, "run-parent")).toBeUndefined();
  });

  it("an eval or a job submitted for the folder around a held one is refused too", () => {
    const { home, parent, child } = folders();
    const release = lockTaskFolder(home, child, "run-child");
    try {
      expect(() => refuseBusyTaskFolder(home, parent)).toThrow(TaskFolderBusy);
    } finally {
      release();
    }
    expect(() => refuseBusyTaskFolder(home, parent)).not.toThrow();
  });
});
