// What the daemon's pieces (workers, SLURM placement, run approval, scheduler, intake, recovery)
// share: the task records and the live attempts in memory, the home, options and site policy, the
// log, and the two things any piece may do to the whole (save a record, look at the queue again).
import type { DaemonPlacement, SitePolicy } from "../policy/site.ts";
import type { LogFormat, Logger } from "./log.ts";
import type { TaskRecord } from "./records.ts";

export interface DaemonOptions {
  home: string;
  /** The inbox (default `<home>/tasks`). */
  inbox?: string;
  concurrency?: number;
  backend?: string;
  /** Model spec for every run (`scripted:FILE`, a models config path). Default: `<home>/models.yaml`. */
  model?: string;
  sitePolicy?: string;
  logFormat?: LogFormat;
  log?: Logger;
  /** How long a SAM must stay unchanged before it is taken (ms, default 1000). */
  settleMs?: number;
  /** How often operator requests and the schedule are looked at (ms, default 500). */
  pollMs?: number;
  /** SIGTERM grace for workers to checkpoint and stop their sandbox before SIGKILL (ms). */
  stopTimeoutMs?: number;
  /** Where tasks run: here in worker processes, or as SLURM jobs. Default: the site policy's `daemon.placement`, else local. */
  placement?: DaemonPlacement;
  /** How often a placed task's SLURM job is looked up (ms, default 2000). */
  slurmPollMs?: number;
}

/** One attempt being run: a local worker process, or a task placed on SLURM. */
export interface Live {
  /** The local worker's pid; 0 for a task placed on SLURM (it has a job instead). */
  pid: number;
  /** The SLURM job of a placed task, once sbatch answered. */
  jobId?: string;
  runId: string;
  adopted: boolean;
  cancelling?: boolean;
  /** Settles once the attempt's end has been recorded. */
  done: Promise<void>;
}

export interface DaemonCore {
  readonly home: string;
  readonly options: DaemonOptions;
  readonly site: SitePolicy;
  readonly log: Logger;
  /** Every task the daemon knows, by inbox key. */
  readonly records: Map<string, TaskRecord>;
  /** The attempts running now, by task key. */
  readonly live: Map<string, Live>;
  /** True once the daemon stops: nothing new is taken or started. */
  readonly stopping: boolean;
  /** Writes the task's status file. */
  save(record: TaskRecord): void;
  /** Looks at the queue again (a slot, GPUs or money may have freed up). */
  schedule(): void;
}

export function now(): string {
  return new Date().toISOString();
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
