// How a run's outcome is said: an error that ends runs (RunEnding) becomes the outcome with its
// record (tampering per file, any other a `limit` event); a failed iteration's reason names the
// failed checks and review items.
import type { RunState } from "../loop/state.ts";
import { outcomeOfEnding } from "../run-ending.ts";
import { Tampering } from "./checks.ts";
import type { PassExit } from "./conversation.ts";
import type { RunSession } from "./session.ts";

/** Ends the run with the outcome an ending error gives it, recorded on the history first. */
export function endWithError(session: RunSession, error: Error): void {
  const outcome = outcomeOfEnding(error);
  if (error instanceof Tampering) {
    for (const found of error.found) {
      session.history.append({
        type: "tampering",
        iteration: session.state.iteration,
        file: found.absolute,
        problem: found.problem,
        expected: found.expected,
        actual: found.actual,
      });
    }
  } else {
    session.limit(outcome.limit, outcome.reason);
  }
  session.end({
    status: outcome.status,
    reason: outcome.reason,
    ...(outcome.cause ? { cause: outcome.cause } : {}),
  });
}

export function failureReason(state: RunState): string {
  const failed = (state.checks ?? [])
    .filter((c) => !c.passed)
    .map((c) => (c.node ? `${c.id} (sub-SAM ${c.node})` : c.id));
  const items = (state.verdict?.items ?? []).filter((i) => !i.pass).map((i) => i.id);
  const parts = [];
  if (failed.length) parts.push(`failed checks: ${failed.join(", ")}`);
  if (items.length) parts.push(`review failed items: ${items.join(", ")}`);
  if (state.work && state.work.exit !== "done") parts.push(`work pass ended: ${state.work.exit}`);
  return parts.join("; ") || "review did not pass";
}

export function exitReason(exit: PassExit): string {
  switch (exit.type) {
    case "done":
      return exit.claim;
    case "blocker":
      return exit.reason;
    case "answer":
      return "answered";
    default:
      return exit.reason;
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
