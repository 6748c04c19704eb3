// The run checkpoint `state.json`: written after every phase, atomically (temp file, fsync, rename,
// fsync of the folder), so a process killed at any moment leaves the last completed phase on disk.
import { existsSync, readFileSync } from "node:fs";
import type { PrescanPlan } from "../agents/prescan.ts";
import type { CheckOutcome, ReviewVerdict, WorkReport } from "../agents/review.ts";
import { writeJsonAtomic } from "../atomic-write.ts";
import type { AuditHead } from "../audit/types.ts";
import type { LimitConfig } from "../run/limits.ts";
import type { PristineSet } from "../run/pristine.ts";

/**
 * The phases in the order a run completes them: each iteration runs `prescan` to `iteration_end`,
 * then `final_review` and `ended` close the run. The report's timeline reads them from here.
 */
export const PHASES = [
  "created",
  "prescan",
  "work",
  "checks",
  "review",
  "iteration_end",
  "final_review",
  "ended",
] as const;

/** The last phase that completed. `iteration_end` closes an iteration; `ended` closes the run. */
export type Phase = (typeof PHASES)[number];

export type Outcome = {
  status: "passed" | "failed" | "blocked";
  reason: string;
  /** Why a failed run failed when it was not the task: `sandbox` (it died twice; exit code 4). */
  cause?: "sandbox";
};

export interface RunState {
  version: 1;
  runId: string;
  /** Absolute path of the SAM file the run started from. */
  samFile: string;
  samSha256: string;
  /** Every SAM file (root and referenced sub-SAMs) with its hash at start. */
  samFiles: { file: string; sha256: string }[];
  /** The runner's copies of SAM files and check assets (runs/<id>/pristine/), hashed at start. */
  pristine: PristineSet;
  /** Allocated bytes of the task folder at start: the base of the task-folder quota. */
  taskFolderBaseBytes?: number;
  backend: string;
  /** Model spec the run was started with (`scripted:FILE`, a models config path). */
  model?: string;
  phase: Phase;
  iteration: number;
  /** Failed attempts per node id (the `iterations` limit is per node). */
  attempts: Record<string, number>;
  completeNodes: string[];
  plan?: PrescanPlan;
  work?: WorkReport & { steps: number; toolCalls: number };
  checks?: CheckOutcome[];
  verdict?: ReviewVerdict & { passed: boolean };
  /** Rank the next pre-scan suggests, moved by review rank adjustments. */
  workRank: number;
  direction?: string;
  outcome?: Outcome;
  /** Spend at the checkpoint; `at` is when it was taken (a resume adds what the tape holds after it). */
  spent: { tokens: number; usd: number; elapsedMs: number; at?: string };
  /** The limits this run was started with (defaults, options, SAM requests). */
  limits: LimitConfig;
  /** History tape length (bytes) at this checkpoint: a resume cuts the tape back to it. */
  historyBytes: number;
  /**
   * The audit tape's head at this checkpoint (AuditTape.anchor()): `scifi audit verify` reports a
   * tape cut back before it or re-chained against it. Absent before the first call and in older runs.
   */
  auditHead?: AuditHead;
  resumes: number;
}

export function writeState(file: string, state: RunState): void {
  // Private to the user (0600); a missing run folder stays an error rather than being created.
  writeJsonAtomic(file, state, { mode: 0o600, tempFile: `${file}.tmp`, createFolder: false });
}

export function readState(file: string): RunState {
  if (!existsSync(file))
    throw new Error(`no run state at ${file}: is the run id right? (runs live under runs/<runId>/)`);
  const state = JSON.parse(readFileSync(file, "utf8")) as RunState;
  if (state.version !== 1) throw new Error(`${file}: unsupported state version ${String(state.version)}`);
  return state;
}
