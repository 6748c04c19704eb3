// The daemon with SLURM: real Docker, the real one-node SLURM cluster, scripted models (labelled
// scripted). A `jobs: slurm` task run by a local worker gets the job tools and its job lines reach
// the history tape; with placement `slurm` a task runs as a SLURM job and `scifi status` shows it.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskRecord } from "../../runner/daemon/records.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { runDir } from "../../runner/paths.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";
import {
  type Home,
  makeHome,
  type RunningDaemon,
  scifi,
  startDaemon,
  tasksByKey,
  waitFor,
} from "./harness.ts";

const SLURM_FIXTURES = join(REPO, "test", "fixtures", "slurm");
const homes: Home[] = [];
const daemons: RunningDaemon[] = [];

function dropFixture(h: Home, fixture: string, key: string): void {
  cpSync(join(SLURM_FIXTURES, fixture), join(h.inbox, key), { recursive: true });
}

async function ended(h: Home, key: string, timeoutMs: number): Promise<TaskRecord> {
  return waitFor(
    `${key} to end`,
    () => {
      const t = tasksByKey(h).get(key);
      return t && !["queued", "running"].includes(t.state) ? t : undefined;
    },
    timeoutMs,
  );
}

function logOf(h: Home, key: string): string {
  const file = join(h.home, "daemon", "logs", key, "attempt-1.log");
  return existsSync(file) ? readFileSync(file, "utf8") : "";
}

/** The job's line in squeue ("" once SLURM no longer lists it as live). */
function squeue(jobId: string): string {
  return execFileSync("squeue", ["-h", "-j", jobId, "-o", "%i %T"], { encoding: "utf8" }).trim();
}

async function stop(d: RunningDaemon): Promise<void> {
  d.child.kill("SIGTERM");
  await d.exited;
}

describe.skipIf(!hasEngine("slurm") || !hasEngine("docker"))("daemon with SLURM (scripted models)", () => {
  beforeAll(() => {
    execFileSync("bash", [join(REPO, "scripts", "build-image.sh"), "--base-only"], { stdio: "inherit" });
  }, 1_200_000);
  afterAll(async () => {
    for (const d of daemons) if (d.child.exitCode === null) d.child.kill("SIGKILL");
    for (const h of homes) rmSync(h.root, { recursive: true, force: true });
  });

  it("a jobs: slurm task run by a local worker submits its job; the job lines are on its history", async () => {
    const h = makeHome();
    homes.push(h);
    const d = startDaemon(h, ["--model", `scripted:${join(SLURM_FIXTURES, "agent-pass.yaml")}`]);
    daemons.push(d);
    dropFixture(h, "agent", "sum");
    const task = await ended(h, "sum", 240_000);
    await stop(d);
    expect(task.state, `${task.reason}\n${d.log()}`).toBe("passed");
    const runId = task.attempts.at(-1)?.runId ?? "";
    const history = readHistory(join(runDir(h.home, runId), "history.jsonl"));
    expect(
      history.filter((e) => e.type === "job").map((e) => e.type === "job" && `${e.action}:${e.decision}`),
    ).toEqual(["submit:allowed", "status:allowed", "output:allowed", "cancel_all:allowed"]);
  }, 300_000);

  it("scifi cancel on a running jobs: slurm task cancels the job its agent submitted", async () => {
    const h = makeHome();
    homes.push(h);
    const d = startDaemon(h, ["--model", `scripted:${join(SLURM_FIXTURES, "agent-interrupted.yaml")}`]);
    daemons.push(d);
    dropFixture(h, "agent", "long");
    const jobId = await waitFor("the agent's job to be live", () => {
      const runId = tasksByKey(h).get("long")?.attempts.at(-1)?.runId;
      const records = runId ? join(runDir(h.home, runId), "jobs", "jobs.json") : "";
      if (!records || !existsSync(records)) return undefined;
      const id = (JSON.parse(readFileSync(records, "utf8")) as { jobs: { jobId: string }[] }).jobs[0]?.jobId;
      return id && squeue(id) ? id : undefined;
    });
    const cancel = scifi(h, ["cancel", "long"]);
    expect(cancel.code, `${cancel.stderr}\n${d.log()}\n${logOf(h, "long")}`).toBe(0);
    const task = await ended(h, "long", 60_000);
    await stop(d);
    expect(task.state, `${task.reason}\n${d.log()}`).toBe("cancelled");
    await waitFor(`job ${jobId} to leave squeue`, () => squeue(jobId) === "", 30_000);
  }, 300_000);

  it("with placement slurm a task runs as a SLURM job, passes, and status --json shows the job", async () => {
    const h = makeHome();
    homes.push(h);
    writeFileSync(join(h.home, "site-policy.yaml"), "daemon:\n  placement: slurm\n");
    const d = startDaemon(h, ["--model", `scripted:${join(SLURM_FIXTURES, "placed-pass.yaml")}`]);
    daemons.push(d);
    dropFixture(h, "placed", "placed");
    const task = await ended(h, "placed", 240_000);
    const status = scifi(h, ["status", "--json"]);
    await stop(d);
    expect(task.state, `${task.reason}\n${d.log()}`).toBe("passed");
    const slurm = task.attempts.at(-1)?.slurm;
    expect(slurm?.jobId).toMatch(/^\d+$/);
    expect(slurm?.state).toBe("COMPLETED");
    const rows = (
      JSON.parse(status.stdout) as { tasks: { task: string; slurmJob?: string; state: string }[] }
    ).tasks;
    expect(rows).toEqual([
      expect.objectContaining({ task: "placed", state: "passed", slurmJob: slurm?.jobId }),
    ]);
    expect(d.log()).toContain('"event":"submitted"');
  }, 300_000);

  it("with placement slurm, scifi cancel scancels the task's job", async () => {
    const h = makeHome();
    homes.push(h);
    writeFileSync(join(h.home, "site-policy.yaml"), "daemon:\n  placement: slurm\n");
    const d = startDaemon(h, [
      "--model",
      `scripted:${join(REPO, "test", "daemon", "fixtures", "placed-slow.yaml")}`,
    ]);
    daemons.push(d);
    dropFixture(h, "placed", "slow");
    const jobId = await waitFor("the placed job to run", () => {
      const slurm = tasksByKey(h).get("slow")?.attempts.at(-1)?.slurm;
      return slurm?.state === "RUNNING" ? slurm.jobId : undefined;
    });
    const cancel = scifi(h, ["cancel", "slow"]);
    expect(cancel.code, cancel.stderr).toBe(0);
    const task = await ended(h, "slow", 60_000);
    await stop(d);
    expect(task.state, `${task.reason}\n${d.log()}`).toBe("cancelled");
    expect(task.reason).toBe(`cancelled by the operator (scancel ${jobId})`);
    expect(squeue(jobId)).toBe("");
  }, 300_000);

  it("with placement slurm, a task paused by scifi ctl resumes as a new SLURM job, never a local worker (a41d)", async () => {
    const h = makeHome();
    homes.push(h);
    writeFileSync(join(h.home, "site-policy.yaml"), "daemon:\n  placement: slurm\n");
    const d = startDaemon(h, [
      "--model",
      `scripted:${join(REPO, "test", "daemon", "fixtures", "placed-pause.yaml")}`,
    ]);
    daemons.push(d);
    dropFixture(h, "placed", "pausing");
    const first = await waitFor("the placed job to run its run", () => {
      const attempt = tasksByKey(h).get("pausing")?.attempts.at(-1);
      return attempt?.slurm?.state === "RUNNING" && attempt.runId ? attempt : undefined;
    });
    const pause = scifi(h, ["ctl", first.runId, "pause"]);
    expect(pause.code, pause.stderr).toBe(0);
    await waitFor("the task to be paused", () =>
      tasksByKey(h).get("pausing")?.state === "paused" ? true : undefined,
    );
    const resume = scifi(h, ["ctl", first.runId, "resume"]);
    expect(resume.code, resume.stderr).toBe(0);
    await waitFor("the task to leave paused", () =>
      tasksByKey(h).get("pausing")?.state !== "paused" ? true : undefined,
    );
    const task = await ended(h, "pausing", 240_000);
    await stop(d);
    expect(task.state, `${task.reason}\n${d.log()}`).toBe("passed");
    const attempt = task.attempts.at(-1);
    expect(task.attempts).toHaveLength(1);
    expect(attempt?.runId).toBe(first.runId);
    expect(attempt?.resumes).toBe(1);
    expect(attempt?.slurm?.jobId).toMatch(/^\d+$/);
    expect(attempt?.slurm?.jobId).not.toBe(first.slurm?.jobId);
    // No local worker: the daemon's log has no start or resume event of one, two submissions.
    expect(d.log()).not.toMatch(/"event":"(start|resume)"/);
    expect(d.log().match(/"event":"submitted"/g)).toHaveLength(2);
  }, 300_000);
});
