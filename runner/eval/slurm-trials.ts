// `scifi eval --slurm`: each trial is one SLURM job, placed through `scifi submit`'s path
// (runner/jobs/submit.ts submitTask: the SAM's resources mapped to sbatch options, capped by the
// site policy, a batch script and a record under <home>/submits/). The job runs
// `scifi eval trial <eval> <trial>` on the node, which is runTrial (trial.ts), the same as a local
// trial: the job itself writes the trial's result.json. The eval waits for that file; a job that
// ends without writing it is an `error`. The job's id is kept in the trial's job.json, so a resumed
// eval waits for a job that is still live instead of submitting the trial twice.
import { existsSync, readFileSync } from "node:fs";
import { writeJsonAtomic } from "../atomic-write.ts";
import type { SlurmClient } from "../jobs/slurm.ts";
import { earlierAttempts, paidUsd, readAttempts } from "./attempts.ts";
import { type EvalPlan, evalFiles, type PlannedTrial } from "./plan.ts";
import { attemptOwner, readTrialResult, recoverFinished, writeTrialResult } from "./trial.ts";
import type { TrialResult } from "./trial-result.ts";

interface JobRecord {
  jobId: string;
  submittedAt: string;
  submitDir: string;
}

export interface SlurmTrialOptions {
  home: string;
  evalDir: string;
  plan: EvalPlan;
  /** argv that starts scifi on the node (default: submitTask's, this Node and bin/scifi.js). */
  scifiCommand?: string[];
  /** How often the eval looks at a job (ms). */
  pollMs?: number;
}

export async function slurmTrialRunner(
  o: SlurmTrialOptions,
): Promise<(trial: PlannedTrial) => Promise<TrialResult>> {
  const { SlurmClient, LIVE_STATES } = await import("../jobs/slurm.ts");
  const { submitTask } = await import("../jobs/submit.ts");
  const { loadSam } = await import("../run/setup.ts");
  const slurm = new SlurmClient();
  const pollMs = o.pollMs ?? 1000;
  const { plan, evalDir } = o;
  return async (trial) => {
    const files = evalFiles(evalDir);
    const before = readTrialResult(evalDir, trial.trialId);
    let job = readJob(files.job(trial.trialId));
    if (!(job && (await liveState(slurm, job.jobId)))) {
      const task = plan.tasks.find((t) => t.name === trial.task);
      const variant = task?.variants.find((v) => v.name === trial.variant);
      if (!variant) throw new Error(`trial ${trial.trialId}: its variant is not in the plan`);
      const submitted = new Date();
      const placed = await submitTask({
        home: o.home,
        sam: await loadSam(variant.file, o.home),
        flags: {},
        backend: plan.backend === "docker" || plan.backend === "apptainer" ? plan.backend : "auto",
        dryRun: false,
        ...(o.scifiCommand ? { scifiCommand: o.scifiCommand } : {}),
        command: ["eval", "trial", plan.evalId, trial.trialId],
        now: submitted,
      });
      job = { jobId: placed.jobId ?? "", submittedAt: submitted.toISOString(), submitDir: placed.submitDir };
      writeJsonAtomic(files.job(trial.trialId), job, { mode: 0o644 });
    }
    const started = job.submittedAt;
    for (;;) {
      await new Promise((r) => setTimeout(r, pollMs));
      const result = readTrialResult(evalDir, trial.trialId);
      // A result written by this job (an old error result being retried does not count).
      if (result && result.startedAt !== before?.startedAt) return result;
      const info = await slurm.jobInfo(job.jobId).catch(() => undefined);
      if (info && LIVE_STATES.has(info.state)) continue;
      // The job is over: give its last write a moment (shared file systems lag), then call it.
      await new Promise((r) => setTimeout(r, pollMs));
      const last = readTrialResult(evalDir, trial.trialId);
      if (last && last.startedAt !== before?.startedAt) return last;
      // A job killed between its run's end and its result: that run is the trial's.
      const kept = recoverFinished({ home: o.home, evalDir, plan, trial });
      if (kept) return kept;
      const now = new Date().toISOString();
      // What the job's runs cost is paid whether or not it wrote a result.
      const earlier = earlierAttempts(
        readAttempts(evalDir, trial.trialId, attemptOwner(o.home, evalDir, trial)),
        "",
      );
      const error: TrialResult = {
        version: 1,
        evalId: plan.evalId,
        trialId: trial.trialId,
        task: trial.task,
        variant: trial.variant,
        model: trial.model,
        scripted: plan.models.find((m) => m.label === trial.model)?.scripted ?? false,
        repeat: trial.repeat,
        status: "error",
        verdict: "ERROR",
        exitCode: 1,
        cause: `SLURM job ${job.jobId} ended ${info?.state ?? "(unknown to SLURM)"}${info?.exitCode ? ` (exit ${info.exitCode})` : ""} without a trial result; its log: ${job.submitDir}/slurm-${job.jobId}.out`,
        iterations: 0,
        wallMs: Date.now() - Date.parse(started),
        tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        cacheReadShare: 0,
        usd: paidUsd(earlier),
        ...(earlier.length > 0 ? { earlier } : {}),
        toolCalls: 0,
        toolRejections: 0,
        approvalsWaited: 0,
        runId: "",
        runDir: "",
        startedAt: started,
        endedAt: now,
      };
      writeTrialResult(evalDir, error);
      return error;
    }
  };
}

/** The state of a job SLURM still runs or holds (pending, running, ...), else undefined. */
async function liveState(slurm: SlurmClient, jobId: string): Promise<string | undefined> {
  const { LIVE_STATES } = await import("../jobs/slurm.ts");
  const info = await slurm.jobInfo(jobId).catch(() => undefined);
  return info && LIVE_STATES.has(info.state) ? info.state : undefined;
}

/**
 * The live SLURM job running this trial, unless it is this very process (a job's own `scifi eval
 * trial`): a second runner of the trial would replace its copy under that job's run.
 */
export async function otherLiveJob(
  evalDir: string,
  trialId: string,
): Promise<{ jobId: string; state: string } | undefined> {
  const job = readJob(evalFiles(evalDir).job(trialId));
  if (!job?.jobId || process.env.SLURM_JOB_ID === job.jobId) return undefined;
  const { SlurmClient } = await import("../jobs/slurm.ts");
  const state = await liveState(new SlurmClient(), job.jobId);
  return state ? { jobId: job.jobId, state } : undefined;
}

function readJob(file: string): JobRecord | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as JobRecord;
  } catch {
    return undefined;
  }
}
