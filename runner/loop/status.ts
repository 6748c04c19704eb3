// What the live display shows while a run goes on.
import type { LimitConfig } from "./limits.ts";

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
}
