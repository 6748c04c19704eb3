// a38d-daemon-owner-spoof (fixed): a paused daemon task's run is resumed outside the daemon by
// setting SLURM_JOB_ID to the id of the task's old, ended job.
//
// The promise (docs/daemon.md, placement slurm: a paused placed task resumes as a new job, through
// `scifi ctl <task> resume`; runner/cli/commands/run.ts daemonOwner: `scifi run --resume` of a daemon
// task's run that has not ended is refused, "resumed here, the task's record would never learn its
// run went on"; the one exemption is the daemon's own SLURM job for the attempt).
// What happened: the exemption is `process.env.SLURM_JOB_ID === attempt.slurm.jobId`, read whatever
// the task's state. A paused task's last attempt still holds the job that ended when it paused (shown
// by `scifi status`); `SLURM_JOB_ID=<that id> scifi run --resume <run>` on the login node passes the
// ownership check (it goes on to look for the run) while the daemon still lists the task paused,
// and its next `ctl resume` would place a second job for a run that already went on.
// Fixed: the exemption holds only while the task is `running` (placed by the daemon, not paused or
// ended) and its attempt names this job (runner/cli/commands/run.ts daemonOwner).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const CLI = resolve(import.meta.dirname, "..", "..", "bin", "scifi.js");

function resumeWith(state: string, job: string | undefined): string {
  const home = mkdtempSync(join(tmpdir(), "scifi-a38d-owner-"));
  mkdirSync(join(home, "daemon", "tasks"), { recursive: true });
  const runId = "20261204-210000-sum-abcdef";
  const now = new Date().toISOString();
  const attempt = { n: 1, runId, startedAt: now, resumes: 0, slurm: { jobId: "4242", submitDir: "/x" } };
  const record = { version: 1, key: "sum", kind: "folder", source: "/x", samFile: "/x/task.md", sha256: "0" };
  writeFileSync(
    join(home, "daemon", "tasks", "sum.json"),
    JSON.stringify({
      ...record,
      state,
      gpus: 0,
      budgetUsd: 1,
      queuedAt: now,
      updatedAt: now,
      attempts: [attempt],
    }),
  );
  const env: Record<string, string | undefined> = { ...process.env, SCIFI_HOME: home, SLURM_JOB_ID: job };
  if (job === undefined) delete env.SLURM_JOB_ID;
  try {
    execFileSync(process.execPath, [CLI, "run", "--resume", runId], { env, encoding: "utf8", stdio: "pipe" });
    return "exit 0";
  } catch (error) {
    return String((error as { stderr?: string }).stderr);
  }
}

describe("a38d: the daemon-owner exemption of `scifi run --resume`", () => {
  it("refuses a paused task's run even with SLURM_JOB_ID set to the task's old job", () => {
    expect(resumeWith("paused", undefined)).toMatch(/belongs to daemon task sum \(paused\)/);
    expect(resumeWith("paused", "4242")).toMatch(/belongs to daemon task sum \(paused\)/);
  });
});
