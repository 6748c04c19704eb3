// A single call (the pre-scan, the final review) whose brief the provider refused as too long and
// the runner sent again shorter (runner/agents/refused-brief.ts): on the history as a pass's retry
// is, a `context` event, `retried`, naming the call's role (the tape holds both requests).
import type { RefusedRetry } from "../../agents/refused-brief.ts";
import type { RunSession } from "./session.ts";

/** The onRetried callback of a single call with `role`, writing the history's `context` event. */
export function recordRefusedRetry(session: RunSession, role: string): (retry: RefusedRetry) => void {
  return (retry) =>
    session.history.append({
      type: "context",
      iteration: session.state.iteration,
      action: "retried",
      role,
      budget: retry.budget,
      elided: 0,
      tokensBefore: retry.tokensBefore,
      tokensAfter: retry.tokensAfter,
    });
}
