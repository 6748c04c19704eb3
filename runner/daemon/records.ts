// The daemon's files under `<home>/daemon/`: the lock, one status file per task (written atomically),
// each task's work folder (single-file tasks) and per-attempt logs, and the operator's requests.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeJsonAtomic } from "../atomic-write.ts";

export const daemonPaths = (home: string) => {
  const dir = join(home, "daemon");
  return {
    dir,
    lock: join(dir, "daemon.lock"),
    tasks: join(dir, "tasks"),
    task: (key: string) => join(dir, "tasks", `${key}.json`),
    /** Work folder of a single-file task: a copy of the SAM and the files the agent writes. */
    work: (key: string) => join(dir, "work", key),
    log: (key: string, attempt: number) => join(dir, "logs", key, `attempt-${attempt}.log`),
    /** `scifi cancel/retry` drop a request file here; the daemon acts on it and deletes it. */
    requests: join(dir, "requests"),
  };
};

export type TaskState =
  | "queued"
  | "running"
  /** `scifi ctl <run> pause` took: no worker, no slot; `scifi ctl <run> resume` queues it again. */
  | "paused"
  | "passed"
  | "failed"
  | "blocked"
  | "rejected"
  | "cancelled";

export const FINAL_STATES: ReadonlySet<TaskState> = new Set([
  "passed",
  "failed",
  "blocked",
  "rejected",
  "cancelled",
]);

export interface Attempt {
  n: number;
  /** The run's id; for a task placed on SLURM, empty until the node's `scifi run` has written its state. */
  runId: string;
  startedAt: string;
  endedAt?: string;
  /** Pid of the `scifi run` worker while it runs (checked on restart: adopt, never run twice). */
  pid?: number;
  exitCode?: number | null;
  /** How many times this attempt was resumed from its checkpoint. */
  resumes: number;
  /** Set when the attempt was placed as a SLURM job (daemon placement `slurm`); jobId empty until sbatch answered. */
  slurm?: { jobId: string; submitDir: string; state?: string };
}

export interface TaskRecord {
  version: 1;
  /** The inbox entry name: `foo.md` (single file) or `foo` (folder with task.md). */
  key: string;
  kind: "file" | "folder";
  /** The SAM in the inbox. */
  source: string;
  /** The SAM the run reads (the copy in the work folder for a single-file task). */
  samFile: string;
  /** SHA-256 of the inbox SAM when it was (re)queued: a different hash means it was edited. */
  sha256: string;
  state: TaskState;
  reason?: string;
  name?: string;
  gpus: number;
  budgetUsd: number;
  queuedAt: string;
  updatedAt: string;
  /** Set when a stopped or crashed run waits to continue from its checkpoint. */
  resumeRunId?: string;
  /** The SAM's `approval:` list and `approval_timeout` (the daemon asks `run` itself, before a worker starts). */
  approval?: string[];
  approvalTimeoutSec?: number;
  /**
   * `approval: [run]` (SAM or site): the run id the daemon reserved for its request before starting a
   * worker (the request lives in that run's folder; the run starts under this id once approved).
   */
  runApproval?: { runId: string; approved?: boolean };
  attempts: Attempt[];
}

/** Task status files are written atomically (shared helper; re-exported for existing callers). */
export { writeJsonAtomic };

export function writeTask(home: string, record: TaskRecord): void {
  record.updatedAt = new Date().toISOString();
  writeJsonAtomic(daemonPaths(home).task(record.key), record);
}

export function readTask(home: string, key: string): TaskRecord | undefined {
  const file = daemonPaths(home).task(key);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as TaskRecord;
}

/** Every task record, oldest queued first. */
export function listTasks(home: string): TaskRecord[] {
  const dir = daemonPaths(home).tasks;
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as TaskRecord)
    .sort((a, b) => a.queuedAt.localeCompare(b.queuedAt));
}

/** A task's record gone (its SAM left the inbox before it could ever run). */
export function removeTask(home: string, key: string): void {
  rmSync(daemonPaths(home).task(key), { force: true });
}

export function lastAttempt(record: TaskRecord): Attempt | undefined {
  return record.attempts.at(-1);
}
