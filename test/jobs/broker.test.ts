// The job broker against the real one-node SLURM cluster (scripts/start-slurm.sh).
import { execFileSync } from "node:child_process";
import { statSync } from "node:fs";
import { readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { JobSandbox } from "../../runner/jobs/batch-script.ts";
import { JobBroker, type JobEvent } from "../../runner/jobs/broker.ts";
import { JobRefused } from "../../runner/jobs/errors.ts";
import { DEFAULT_JOBS_POLICY, type JobsPolicy } from "../../runner/jobs/policy.ts";
import type { SamMetadata } from "../../runner/sam/types.ts";
import { hasEngine } from "../helpers/engines.ts";
import { samMetadata, taskFolders, writeScript } from "./fixtures.ts";

const roots: string[] = [];
const brokers: JobBroker[] = [];

// Most cases test the broker's rules, so their jobs run directly on the node (policy `sandbox: none`);
// the container cases say so.
async function makeBroker(
  sam: Partial<SamMetadata> = {},
  policy: Partial<JobsPolicy> = {},
  sandbox: JobSandbox = { engine: "none" },
) {
  const folders = await taskFolders("broker");
  roots.push(folders.root);
  const events: JobEvent[] = [];
  const broker = new JobBroker({
    runId: `test-${Date.now()}`,
    taskDir: folders.taskDir,
    recordsDir: folders.recordsDir,
    sam: samMetadata(sam),
    policy: { ...DEFAULT_JOBS_POLICY, ...policy },
    sandbox,
    onEvent: (e) => events.push(e),
  });
  brokers.push(broker);
  return { broker, events, ...folders };
}

/** Polls job_status with a short backoff until the job leaves the live states. */
async function waitForEnd(broker: JobBroker, jobId: string, timeoutMs = 45_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let delay = 200;
  while (Date.now() < deadline) {
    const { state } = await broker.status(jobId);
    if (!["PENDING", "CONFIGURING", "RUNNING", "COMPLETING"].includes(state)) return state;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 1.5, 1000);
  }
  throw new Error(`job ${jobId} did not end within ${timeoutMs} ms`);
}

async function refusal(promise: Promise<unknown>): Promise<JobRefused> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(JobRefused);
  return error as JobRefused;
}

function squeueIds(ids: string[]): string[] {
  if (ids.length === 0) return [];
  const out = execFileSync("squeue", ["-h", "-j", ids.join(","), "-o", "%i"], { encoding: "utf8" });
  return out.split("\n").filter(Boolean);
}

describe.skipIf(!hasEngine("slurm"))("job broker on a real SLURM cluster", () => {
  afterAll(async () => {
    for (const b of brokers) await b.cancelAll("test cleanup", 5000).catch(() => {});
    for (const root of roots) await rm(root, { recursive: true, force: true });
  });

  it("runs a job that computes a number; the task reads its output", async () => {
    const { broker, events, taskDir } = await makeBroker();
    await writeScript(
      taskDir,
      "compute.sh",
      '#SBATCH --time=99:00:00\necho "answer=$(( $1 * 7 ))"\necho oops >&2',
    );
    const job = await broker.submit({
      script: "/task/compute.sh",
      args: ["6"],
      time: "2:00",
      memory: "100M",
    });
    expect(job).toMatchObject({
      name: "compute",
      stdout: `slurm-out/compute-${job.jobId}.out`,
      time: "0:02:00",
      cpus: 1,
      gpus: 0,
      ignoredDirectives: ["#SBATCH --time=99:00:00"],
    });
    // The agent's #SBATCH line did not widen the grant: SLURM holds the broker's time limit.
    const limit = execFileSync("squeue", ["-h", "-t", "all", "-j", job.jobId, "-o", "%l"], {
      encoding: "utf8",
    });
    expect(limit.trim()).toBe("2:00");
    expect(await waitForEnd(broker, job.jobId)).toBe("COMPLETED");
    const status = await broker.status(job.jobId);
    expect(status).toMatchObject({ state: "COMPLETED", exitCode: "0:0" });
    expect(status).not.toHaveProperty("stdout"); // host paths stay host-side
    expect((await broker.output(job.jobId)).text).toBe("answer=42\n");
    expect((await broker.output(job.jobId, "stderr")).text).toBe("oops\n");
    expect(events.map((e) => `${e.action}:${e.decision}`)).toContain("submit:allowed");
    expect(events.find((e) => e.action === "submit")?.request).toMatchObject({ script: "/task/compute.sh" });
  });

  it("refuses every job of a SAM without jobs: slurm", async () => {
    const { broker, events, taskDir } = await makeBroker({ jobs: undefined });
    await writeScript(taskDir, "a.sh", "true");
    expect(broker.granted).toBe(false);
    const e = await refusal(broker.submit({ script: "a.sh" }));
    expect(e.message).toBe(
      "job request refused (jobs-not-granted): asked to use SLURM jobs; the SAM 'demo' does not request them. Add `jobs: slurm` to the SAM's front matter",
    );
    expect(events).toMatchObject([{ action: "submit", decision: "refused", rule: "jobs-not-granted" }]);
  });

  it("refuses a script outside the task folder, also through a symlink", async () => {
    const { broker, root, taskDir } = await makeBroker();
    const outside = await writeScript(root, "outside.sh", "echo escaped");
    const dotdot = await refusal(broker.submit({ script: "../outside.sh" }));
    expect(dotdot.message).toBe(
      "job request refused (script-outside-task): asked script '../outside.sh'; scripts must lie inside the task folder. Write the batch script into the task folder and pass its relative path",
    );
    expect((await refusal(broker.submit({ script: "/etc/hostname" }))).rule).toBe("script-outside-task");
    await symlink(outside, join(taskDir, "link.sh"));
    const viaLink = await refusal(broker.submit({ script: "link.sh" }));
    expect(viaLink.message).toBe(
      `job request refused (script-outside-task): asked script 'link.sh' (a symlink to '${outside}'); scripts must lie inside the task folder, also after following symlinks. Copy the script into the task folder instead of linking to it`,
    );
    expect((await refusal(broker.submit({ script: "missing.sh" }))).rule).toBe("script-not-found");
    expect(broker.jobIds).toEqual([]);
  });

  it("refuses a FIFO and an oversized script at once, reading neither", async () => {
    const { broker, taskDir } = await makeBroker();
    execFileSync("mkfifo", [join(taskDir, "fifo.sh")]);
    const t0 = Date.now();
    expect((await refusal(broker.submit({ script: "fifo.sh" }))).rule).toBe("script-not-file");
    await writeScript(taskDir, "huge.sh", `#!/bin/sh\n#${"x".repeat(2 * 1024 * 1024)}\n`);
    const huge = await refusal(broker.submit({ script: "huge.sh" }));
    expect(huge.rule).toBe("script-not-file");
    expect(huge.message).toMatch(/larger than 1048576 bytes/);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(broker.jobIds).toEqual([]);
  });

  it("refuses time, GPUs, CPUs and memory above the grant", async () => {
    const { broker, taskDir } = await makeBroker({
      walltimeSec: 600,
      gpu: 0,
      cpus: 1,
      memoryBytes: 1024 ** 3,
    });
    await writeScript(taskDir, "a.sh", "true");
    expect((await refusal(broker.submit({ script: "a.sh", time: "20:00" }))).message).toBe(
      "job request refused (time-above-grant): asked time 0:20:00; the task is granted at most 0:10:00 per job (its walltime, capped by the site). Ask for less time or split the work into shorter jobs",
    );
    expect((await refusal(broker.submit({ script: "a.sh", gpus: 1 }))).message).toBe(
      "job request refused (gpus-above-grant): asked 1 GPU(s); the task is granted 0 GPU(s). Run on CPUs, or the SAM must request `gpu`",
    );
    expect((await refusal(broker.submit({ script: "a.sh", cpus: 2 }))).message).toBe(
      "job request refused (cpus-above-grant): asked 2 CPU(s); the task is granted 1 CPU(s) per job",
    );
    expect((await refusal(broker.submit({ script: "a.sh", memory: "2G" }))).message).toBe(
      "job request refused (memory-above-grant): asked 2 GiB memory; the task is granted 1 GiB per job",
    );
    expect(broker.jobIds).toEqual([]);
  });

  it("answers only for the task's own jobs", async () => {
    const mine = await makeBroker();
    const other = await makeBroker();
    await writeScript(other.taskDir, "s.sh", "sleep 30");
    const foreign = await other.broker.submit({ script: "s.sh", time: 1 });
    for (const call of [
      mine.broker.status(foreign.jobId),
      mine.broker.cancel(foreign.jobId),
      mine.broker.output(foreign.jobId),
    ]) {
      expect((await refusal(call)).message).toBe(
        `job request refused (unknown-job): asked job ${foreign.jobId}; this task started no jobs. A task may query, cancel or read only the jobs it submitted`,
      );
    }
    expect(squeueIds([foreign.jobId])).toEqual([foreign.jobId]); // still running: nothing was cancelled
    expect(await other.broker.cancel(foreign.jobId)).toEqual({
      jobId: foreign.jobId,
      cancelled: true,
      state: "CANCELLED",
    });
  });

  it("caps concurrent and total jobs per task", async () => {
    const { broker, taskDir } = await makeBroker({}, { maxConcurrentJobs: 1, maxTotalJobs: 2 });
    await writeScript(taskDir, "s.sh", "sleep 30");
    const first = await broker.submit({ script: "s.sh", time: 1 });
    expect((await refusal(broker.submit({ script: "s.sh", time: 1 }))).message).toBe(
      `job request refused (concurrent-cap): asked another job while 1 are pending or running (${first.jobId}); the task may have at most 1 at once. Wait for a job to finish (job_status) or cancel one (job_cancel)`,
    );
    await broker.cancel(first.jobId);
    await waitForEnd(broker, first.jobId);
    await broker.submit({ script: "s.sh", time: 1 });
    expect((await refusal(broker.submit({ script: "s.sh", time: 1 }))).message).toBe(
      "job request refused (total-cap): asked job number 3; the task may submit at most 2 jobs in total and has submitted 2",
    );
  });

  it("cancelAll leaves no job of the task in squeue, unless the SAM keeps jobs", async () => {
    const { broker, events, taskDir } = await makeBroker();
    await writeScript(taskDir, "s.sh", "sleep 60");
    const a = await broker.submit({ script: "s.sh", time: 2 });
    const b = await broker.submit({ script: "s.sh", time: 2 });
    expect(squeueIds([a.jobId, b.jobId]).sort()).toEqual([a.jobId, b.jobId].sort());
    const { cancelled } = await broker.cancelAll("task cancelled");
    expect(cancelled.sort()).toEqual([a.jobId, b.jobId].sort());
    expect(squeueIds([a.jobId, b.jobId])).toEqual([]);
    expect(events.at(-1)).toMatchObject({
      action: "cancel_all",
      decision: "allowed",
      request: { reason: "task cancelled" },
    });

    const kept = await makeBroker({ keepJobs: true });
    await writeScript(kept.taskDir, "s.sh", "sleep 60");
    const k = await kept.broker.submit({ script: "s.sh", time: 1 });
    expect(await kept.broker.cancelAll("task ended")).toEqual({ cancelled: [], kept: true, stillLive: [] });
    expect(squeueIds([k.jobId])).toEqual([k.jobId]);
    // Before a verdict nothing of the agent's runs, keep_jobs or not: the job is cancelled and gone.
    const ended = await kept.broker.cancelAll("the checks begin", 15_000, { evenKept: true });
    expect(ended).toEqual({ cancelled: [k.jobId], kept: false, stillLive: [] });
    expect(squeueIds([k.jobId])).toEqual([]);
  });

  it.skipIf(!hasEngine("docker"))(
    "runs the job in the task's container: /task, no network, host paths hidden; cancel stops it",
    async () => {
      const box: JobSandbox = {
        engine: "auto",
        image: "scifi-base:bookworm",
        sif: "/none.sif",
        network: false,
      };
      const { broker, taskDir } = await makeBroker({}, {}, box);
      await writeScript(
        taskDir,
        "probe.sh",
        [
          'echo "pwd=$(pwd)"',
          'echo "task=$(cat marker.txt)"',
          'test -e /work/main && echo "host=visible" || echo "host=hidden"',
          'ip=$(cat /proc/net/dev | grep -c ":" ); echo "interfaces=$ip"',
          "echo result > out.txt",
        ].join("\n"),
      );
      await writeFile(join(taskDir, "marker.txt"), "m1");
      // A root runner's job container runs as the sandbox user (65534), never root; the work phase's
      // sandbox has lent it the task folder meanwhile (runner/sandbox/guard.ts): do the same here.
      if (process.getuid?.() === 0) execFileSync("chown", ["-R", "65534:65534", taskDir]);
      const job = await broker.submit({ script: "probe.sh", time: 2, memory: "200M" });
      expect(await broker.status(job.jobId, 120_000).then((s) => s.state)).toBe("COMPLETED");
      // Only the loopback interface: the container has no network.
      expect((await broker.output(job.jobId)).text).toBe("pwd=/task\ntask=m1\nhost=hidden\ninterfaces=1\n");
      expect((await broker.output(job.jobId, "stderr")).text).toBe("");
      if (process.getuid?.() === 0) expect(statSync(join(taskDir, "out.txt")).uid).toBe(65534);

      await writeScript(taskDir, "long.sh", "sleep 120");
      const long = await broker.submit({ script: "long.sh", time: 3 });
      const name = `scifi-job-${long.jobId}`;
      const running = async () =>
        execFileSync("docker", ["ps", "-q", "--filter", `name=^${name}$`], { encoding: "utf8" }).trim();
      for (let i = 0; i < 180 && (await running()) === ""; i++) await new Promise((r) => setTimeout(r, 500));
      expect(await running()).not.toBe("");
      await broker.cancelAll("task cancelled");
      for (let i = 0; i < 60 && (await running()) !== ""; i++) await new Promise((r) => setTimeout(r, 500));
      expect(await running()).toBe("");
      expect(squeueIds([long.jobId])).toEqual([]);
    },
    // Docker starts two containers here; on a loaded engine that takes a while.
    240_000,
  );

  it("a resumed run's broker takes over the jobs the run submitted before", async () => {
    const first = await makeBroker();
    await writeScript(first.taskDir, "s.sh", "sleep 60");
    const job = await first.broker.submit({ script: "s.sh", time: 2 });
    const resumed = new JobBroker({
      runId: first.broker.runId,
      taskDir: first.taskDir,
      recordsDir: first.recordsDir,
      sam: samMetadata({}),
      policy: DEFAULT_JOBS_POLICY,
      sandbox: { engine: "none" },
      restore: true,
    });
    expect(resumed.jobIds).toEqual([job.jobId]);
    expect((await resumed.status(job.jobId)).state).toMatch(/PENDING|RUNNING/);
    expect((await resumed.cancelAll("task ended")).cancelled).toEqual([job.jobId]);
    expect(squeueIds([job.jobId])).toEqual([]);
  });

  it("reads job output from the run folder, and never writes or reads its task-folder copy through a link", async () => {
    const { broker, root, taskDir } = await makeBroker();
    await writeScript(taskDir, "q.sh", "echo hi");
    const job = await broker.submit({ script: "q.sh", time: 1 });
    await waitForEnd(broker, job.jobId);
    expect(await readFile(join(taskDir, job.stdout), "utf8")).toBe("hi\n");
    const secret = join(root, "secret.txt");
    await writeFile(secret, "host secret\n");
    await rm(join(taskDir, job.stdout));
    await symlink(secret, join(taskDir, job.stdout));
    const output = await broker.output(job.jobId);
    expect(output.text).toBe("hi\n");
    expect(await readFile(secret, "utf8")).toBe("host secret\n");
  });
});
