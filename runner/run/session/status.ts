// What the live display shows while a run goes on.
import type { LimitConfig } from "../../run-folder/state.ts";

export interface RunStatus {
  runId: string;
  iteration: number;
  phase: string;
  node?: string;
  step: number;
  toolCalls: number;
  lastTool?: string;
  tokens: number;
  usd: number;
  elapsedMs: number;
  stepsLeft: number;
  toolCallsLeft: number;
  limits: LimitConfig;
  /** What the run waits for now, e.g. "waiting 120 s: the provider asked to retry after 120 s (429)". */
  notice?: string;
  /** A result just in (a check's, a review's): sent once with the status, never kept in it. */
  result?: string;
}
