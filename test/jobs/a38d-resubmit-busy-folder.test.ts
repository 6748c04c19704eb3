// a38d-resubmit-busy-folder (fixed): `scifi ctl <run> resume` of a run `scifi submit` placed queues a
// new SLURM job while another live run holds the task folder.
//
// The promise (issue 38 point 3: a second run, eval trial, daemon task or SLURM job on a task folder
// that a live run holds "is refused with the holder's run id"; runner/jobs/submit.ts submitTask: "The
// job's `scifi run` would be refused on the node anyway; say so before anything is queued"; docs/
// ctl.md: resume of a submit-placed run submits it again).
// What happened (real SLURM): resubmitRun (runner/jobs/submit.ts) writes the script and calls sbatch
// with no refuseBusyTaskFolder; with another run holding the folder, `ctl resume` prints "resumed
// as SLURM job N" (after writing the resume decision), and the job's `scifi run --resume` is refused
// on the node later, in a log the person is not looking at; the run stays paused.
// Fixed: resubmitRun refuses a folder a live run holds (refuseBusyTaskFolder), and `ctl resume`
// checks it before writing its decision (exit 2, naming the holder).
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SubmissionRecord } from "../../runner/jobs/placement.ts";
import { resubmitRun } from "../../runner/jobs/submit.ts";
import { lockTaskFolder } from "../../runner/task-folder-lock.ts";

function slurm(): boolean {
  try {
    execFileSync("sinfo", ["-h"], { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!slurm())("a38d: ctl resume of a submit-placed run on a folder another run holds", () => {
  it("is refused before sbatch, naming the holder", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38d-resubmit-"));
    chmodSync(root, 0o755);
    const home = join(root, "home");
    const task = join(root, "task");
    mkdirSync(home);
    mkdirSync(task);
    writeFileSync(join(task, "task.md"), "---\nname: t\n---\n# T\n\n## To-do\nx\n");
    const release = lockTaskFolder(home, task, "20261204-000000-holder-aaaaaa");
    const record: SubmissionRecord = {
      version: 1,
      jobId: "1",
      samFile: join(task, "task.md"),
      samSha256: "0",
      name: "t",
      submittedAt: new Date().toISOString(),
      backend: "docker",
      sbatchArgs: ["--time=00:01:00"],
      script: join(home, "job.sbatch"),
      home,
    };
    let queued: string | undefined;
    try {
      const outcome = await resubmitRun(home, record, "20261204-000000-paused-bbbbbb", {
        scifiCommand: ["/bin/true"],
      }).then(
        (next) => {
          queued = next.jobId;
          return `queued job ${next.jobId}`;
        },
        (error: Error) => error.message,
      );
      expect(outcome).toMatch(/in use by run 20261204-000000-holder-aaaaaa/);
    } finally {
      release();
      if (queued) execFileSync("scancel", [queued]);
    }
  });
});
