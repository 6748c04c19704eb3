/** Exit codes of every scifi command (documented in the README). */
export const EXIT = {
  /** Success: valid input, run passed. */
  ok: 0,
  /** Invalid SAM (validate) or a run that failed (hard limit, failed checks or review) or was cancelled. */
  failed: 1,
  /** Usage error or invalid input (bad flags, unreadable config, invalid SAM given to run). */
  usage: 2,
  /** Run blocked: the agent or the review asked for a human. */
  blocked: 3,
  /** Run failed because its sandbox died twice in one phase (not the task's failure): resume it. */
  sandbox: 4,
  /**
   * Run paused (`scifi ctl <run> pause`): checkpointed after a phase, sandboxes stopped, no outcome
   * yet; `scifi ctl <run> resume` (or `scifi run --resume <run>`) continues it.
   */
  paused: 5,
} as const;

/** The exit code of a run's result: paused, or its outcome's. */
export function exitCodeOfResult(result: {
  outcome: { status: string; cause?: string };
  paused?: unknown;
}): number {
  return result.paused ? EXIT.paused : exitCodeOfOutcome(result.outcome);
}

/** The exit code of a run that ended: passed, blocked, failed (a dead sandbox is not the task's failure). */
export function exitCodeOfOutcome(outcome: { status: string; cause?: string }): number {
  if (outcome.status === "passed") return EXIT.ok;
  if (outcome.status === "blocked") return EXIT.blocked;
  return outcome.cause === "sandbox" ? EXIT.sandbox : EXIT.failed;
}
