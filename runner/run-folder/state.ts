// The run checkpoint `state.json`: written after every phase, atomically (temp file, fsync, rename,
// fsync of the folder), so a process killed at any moment leaves the last completed phase on disk.
// A leaf of the run-folder schema: the run writes it, the report reads it, and neither imports the
// other. So the recorded shapes are written here (the plan, the work report, the check outcomes,
// the verdict, the limits, the pristine set); the agents and the loop that produce them import them
// from here (the agents' zod schemas are checked against these types with `satisfies`).
import { existsSync, readFileSync } from "node:fs";
import { writeJsonAtomic } from "../atomic-write.ts";
import type { AuditHead } from "../audit/types.ts";
import type { AppliedProposal } from "./evolve-applied.ts";

/** The pre-scan's plan for the next work pass (runner/agents/prescan.ts validates it). */
export interface RecordedPlan {
  node: string;
  rank: number;
  skills: string[];
  context: string;
  plan: string;
  direction: string;
}

/** How the work pass ended, as the review reads it. */
export interface WorkReport {
  exit: string;
  claim?: string;
  summary?: string;
}

/** One deterministic check's result (runner/run/checks/checks.ts runs them). */
export interface CheckOutcome {
  id: string;
  itemId: string;
  /** The sub-SAM the check belongs to, when it is not the node under review (whole-subtree checks). */
  node?: string;
  command: string;
  passed: boolean;
  exitCode: number;
  timedOut: boolean;
  /** Tail of the output, for the reviewer and the history. */
  output: string;
  /** Wall time of the check's command in ms (runs recorded before it was kept have none). */
  durationMs?: number;
  /** The sandbox it ran in, by name (run, role, stage): which stage saw what. */
  sandbox?: string;
  /**
   * A run stage's view of the task folder (runner/run/checks/check-view.ts): `overlay` or `fuse-overlayfs`
   * (copy-on-write), or `copy`, then why the kinds before it were not used. Not on the history (it
   * reaches prompts, and the reasons name host paths).
   */
  view?: string;
  /**
   * A compare stage's output and exit code, withheld from the agents: the run-folder path of the
   * file that holds them for people (`check-output/...`; run-folder/check-evidence.ts reads it).
   */
  heldOutput?: string;
}

/** The review's verdict on one node (runner/agents/review.ts validates it). */
export interface RecordedVerdict {
  items: { id: string; pass: boolean; evidence: string }[];
  findings: string[];
  fixes: string[];
  rank_adjustment: -1 | 0 | 1;
  blocked?: { reason: string } | undefined;
}

/** The hard limits of one run (defaults in runner/run/session/limits.ts, which enforces them). */
export interface LimitConfig {
  /** Model steps (calls) per work pass. */
  stepsPerPass: number;
  /** Tool calls per work pass. */
  toolCallsPerPass: number;
  /** Tool calls in one model step; the rest of that step's calls are rejected. */
  toolCallsPerStep: number;
  /** An identical call (same tool, same input) is blocked after this many runs... */
  maxRepeats: number;
  /** ...or this many for read-only tools. A successful write resets the counters. */
  maxRepeatsRead: number;
  /** Consecutive steps whose every call failed before the agent is told to report a blocker. */
  failingStepsBeforeBlocker: number;
  /** Iterations (pre-scan, work, checks, review) per run; the SAM's `iterations` overrides. */
  iterations: number;
  /** Wall time of the whole run in seconds; the SAM's `walltime` overrides. */
  walltimeSec: number;
  /** Tokens (input + output + cache) per run. */
  tokens: number;
  /** Money per run; the SAM's `budget` overrides. */
  usd: number;
  /** Default and maximum bash timeout. */
  bashTimeoutSec: number;
  /** Characters of one tool result the model sees. */
  toolOutputChars: number;
}

/** One file of the runner's pristine copies (runner/run/task-folder/pristine.ts takes and restores them). */
export interface PristineFile {
  /** Path relative to the task folder, `/`-separated. */
  rel: string;
  sha256: string;
  /** Permission bits at start (setuid, setgid and sticky bits dropped). */
  mode: number;
  kind: "sam" | "asset";
  /** Hidden check asset: out of the task folder while agents run, present only for the checks. */
  hidden: boolean;
}

export interface PristineSet {
  files: PristineFile[];
  /** Folders (relative) that held only check assets at start: restored to exactly that content. */
  folders: string[];
}

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
  "critique",
  "iteration_end",
  "final_review",
  "ended",
] as const;

/** The last phase that completed. `iteration_end` closes an iteration; `ended` closes the run. */
export type Phase = (typeof PHASES)[number];

export type Outcome = {
  /** `cancelled`: a person cancelled it while it ran (runner/run-ending.ts RunCancelled). */
  status: "passed" | "failed" | "blocked" | "cancelled";
  reason: string;
  /**
   * Why a failed run failed when it was not the task: `sandbox` (it died twice; exit code 4),
   * `model` (no model of the rank answered though each was asked: an outage or a bad key; exit code 1).
   */
  cause?: "sandbox" | "model";
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
  plan?: RecordedPlan;
  work?: WorkReport & { steps: number; toolCalls: number };
  checks?: CheckOutcome[];
  /** `critique`: why the critique sent a passed verdict back (critique: block, or a person denied it). */
  verdict?: RecordedVerdict & { passed: boolean; critique?: string };
  /** Rank the next pre-scan suggests, moved by review rank adjustments. */
  workRank: number;
  direction?: string;
  outcome?: Outcome;
  /** Spend at the checkpoint; `at` is when it was taken (a resume adds what the tape holds after it). */
  spent: { tokens: number; usd: number; elapsedMs: number; at?: string };
  /**
   * The run's limits: those it was started with (defaults, options, SAM requests), as `scifi ctl
   * <run> limits` changed them since.
   */
  limits: LimitConfig;
  /**
   * Set while the run is paused (`scifi ctl <run> pause`, taken after phase `phase`); a resume
   * clears it. The run holds no process and no sandbox then.
   */
  paused?: { at: string; phase: Phase; reason: string };
  /**
   * The `scifi ctl` decision files (runner/run/session/control.ts) this run applied or refused, by name: any
   * other is new, whatever its name sorts after. A string (older runs): the last one applied.
   */
  controlApplied?: string[] | string;
  /** History tape length (bytes) at this checkpoint: a resume cuts the tape back to it. */
  historyBytes: number;
  /**
   * The audit tape's head at this checkpoint (AuditTape.anchor()): `scifi audit verify` reports a
   * tape cut back before it or re-chained against it. Absent before the first call and in older runs.
   */
  auditHead?: AuditHead;
  resumes: number;
  /**
   * The site policy file the run was started (or last resumed) with, when not the home's own
   * (`--site-policy`): `scifi ctl` judges a new limit against it. Absent: the home's.
   */
  sitePolicyFile?: string;
  /** The `scifi evolve` proposals a person had applied when the run started (absent: none, or older runs). */
  evolve?: AppliedProposal[];
  /**
   * The tool that started the run and reads its outcome, when no person resumes it: one of `scifi
   * check-task`'s audits, or a `scifi eval` trial. Such a run takes no pause (`scifi ctl` refuses one,
   * the run refuses one found in control/), and an eval trial's limits are its eval's plan. Absent: a
   * person's run (`scifi run`, the daemon, `scifi submit`).
   */
  startedBy?: RunStarter;
}

/** Who started a run that nobody resumes (RunState.startedBy). */
export type RunStarter =
  | { tool: "check-task"; audit: string }
  | { tool: "eval"; evalId: string; trialId: string };

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
