// a38c-check-task-busy (fixed): `scifi check-task` audits a task folder that a live run holds.
//
// The promise (issue 38 point 3, "check-task + run"; docs/loop.md "One run uses a task folder at a
// time": an eval whose suite holds the folder is refused before any trial, and so is a trial
// copying it later; docs/check-task.md: each audit is a real run "on a fresh copy of the task
// folder"): nothing copies or judges a folder a live run is working in.
// What happened: auditTask (runner/check-task/audit.ts) checks no task-folder lock
// (refuseBusyTaskFolder is called by eval, trials and submit only). Under a live run the folder holds
// the agent's half-done work (and, as root, is lent to the sandbox user, its hidden assets put
// aside): check-task hashes that state, copies it for each audit, and its `untouched` audit judges
// the agent's work as the untouched task: a false "the checks pass on the untouched task folder"
// finding (or a false "sound"), cached under that content hash for every later audit.
// Fixed: auditTask refuses a folder a live run holds (refuseBusyTaskFolder, an AuditInputError naming
// the run: exit 2) before the hash, the cache and any copy.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { auditTask } from "../../runner/check-task/audit.ts";
import { lockTaskFolder } from "../../runner/task-folder-lock.ts";

const SAM =
  "---\nname: t\n---\n# T\n\n## To-do\nWrite out.txt.\n\n## Expectation\n- out.txt exists.\n  ```check\n  test -f out.txt\n  ```\n";

describe("a38c: scifi check-task on a folder a live run holds", () => {
  it("is refused, naming the run, before any audit starts", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38c-check-task-"));
    const home = join(root, "home");
    const task = join(root, "task");
    mkdirSync(home);
    mkdirSync(task);
    writeFileSync(join(task, "task.md"), SAM);
    // The agent of the live run has written its (half-done) work.
    writeFileSync(join(task, "out.txt"), "half done\n");
    const release = lockTaskFolder(home, task, "20261204-live-run");
    try {
      await expect(
        auditTask(task, {
          home,
          // An audit that starts is what must not happen (and keeps this test free of sandboxes).
          onAudit: (audit) => {
            throw new Error(`audit ${audit} started on a folder run 20261204-live-run holds`);
          },
        }),
      ).rejects.toThrow(/in use by run 20261204-live-run/);
    } finally {
      release();
    }
  });
});
