/** Exit codes of every scifi command (documented in the README). */
export const EXIT = {
  /** Success: valid input, run passed. */
  ok: 0,
  /** Invalid SAM (validate) or a run that failed (hard limit, failed checks or review). */
  failed: 1,
  /** Usage error or invalid input (bad flags, unreadable config, invalid SAM given to run). */
  usage: 2,
  /** Run blocked: the agent or the review asked for a human. */
  blocked: 3,
} as const;
