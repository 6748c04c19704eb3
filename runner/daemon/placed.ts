// SLURM placement for the daemon (site policy `daemon: { placement: slurm }`): each task becomes one
// `scifi submit` job instead of a local worker. The job's state comes from SLURM while it is live,
// and the task's final state from the run's own state file once the job has ended.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { BackendChoice, PlacementStatus, SubmissionRecord } from "../jobs/placement.ts";
import type { SlurmClient } from "../jobs/slurm.ts";

export interface PlacedJob {
  jobId: string;
  /** `<home>/submits/<id>/`: the batch script, `submit.json` and the job's `slurm-<id>.out`. */
  submitDir: string;
}

export interface PlaceOptions {
  home: string;
  samFile: string;
  /** The daemon's `--backend`; absent: the node decides (Docker where it has an engine, else Apptainer). */
  backend?: string;
  model?: string;
  /** A paused placed run to continue (`scifi run --resume <run>` as the job's command). */
  resumeRunId?: string;
}

const BACKENDS: readonly BackendChoice[] = ["auto", "docker", "apptainer"];

/** Submits the task as one job (`scifi submit` with the SAM's own limits); throws with sbatch's message. */
export async function submitPlaced(o: PlaceOptions): Promise<PlacedJob> {
  const backend = (o.backend ?? "auto") as BackendChoice;
  if (!BACKENDS.includes(backend))
    throw new Error(`backend '${o.backend}' cannot be placed on SLURM; use one of ${BACKENDS.join(", ")}`);
  const { submitTask } = await import("../jobs/submit.ts");
  const { loadSam } = await import("../run/setup.ts");
  const result = await submitTask({
    home: o.home,
    sam: await loadSam(o.samFile, o.home),
    flags: {},
    backend,
    dryRun: false,
    ...(o.model ? { model: o.model } : {}),
    ...(o.resumeRunId
      ? { command: ["run", "--resume", o.resumeRunId, ...(o.model ? ["--model", o.model] : [])] }
      : {}),
  });
  if (!result.jobId) throw new Error("sbatch returned no job id");
  return { jobId: result.jobId, submitDir: result.submitDir };
}

export function readSubmission(submitDir: string): SubmissionRecord {
  return JSON.parse(readFileSync(join(submitDir, "submit.json"), "utf8")) as SubmissionRecord;
}

/** The last lines of the job's own output, for a failure reason. */
export function jobLogTail(job: PlacedJob): string {
  const file = join(job.submitDir, `slurm-${job.jobId}.out`);
  if (!existsSync(file)) return `no job output at ${file}`;
  const lines = readFileSync(file, "utf8").trim().split("\n");
  return lines.slice(-3).join(" | ") || "empty job output";
}

export interface WatchOptions {
  pollMs: number;
  /** True once the daemon stops: the watch ends and the job keeps running (a restart adopts it). */
  stopped: () => boolean;
  /** Each status seen (the daemon records the SLURM state and the run id as they appear). */
  onStatus: (status: PlacementStatus) => void;
}

/** SLURM forgetting a job for this many polls in a row counts as ended (one lookup may fail transiently). */
const UNKNOWN_POLLS_AS_ENDED = 3;

/**
 * Polls until the job has left SLURM's live states; returns the last status, or undefined when the
 * daemon stopped first.
 */
export async function watchPlaced(
  home: string,
  job: PlacedJob,
  slurm: SlurmClient,
  o: WatchOptions,
): Promise<PlacementStatus | undefined> {
  const { LIVE_STATES } = await import("../jobs/slurm.ts");
  const { placementStatus } = await import("../jobs/placement.ts");
  const record = readSubmission(job.submitDir);
  let unknown = 0;
  for (;;) {
    if (o.stopped()) return undefined;
    const status = await placementStatus(home, record, slurm);
    o.onStatus(status);
    const state = status.slurm?.state;
    if (state && !LIVE_STATES.has(state)) return status;
    unknown = state ? 0 : unknown + 1;
    if (unknown >= UNKNOWN_POLLS_AS_ENDED) return status;
    await new Promise((r) => setTimeout(r, o.pollMs));
  }
}
