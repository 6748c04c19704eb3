// How a run's outcome is said: a failed iteration's reason names the failed checks and review
// items; a pass's exit says why it ended.
import type { RunState } from "../../run-folder/state.ts";
import type { PassExit } from "./conversation.ts";

export function failureReason(state: RunState): string {
  const failed = (state.checks ?? [])
    .filter((c) => !c.passed)
    .map((c) => (c.node ? `${c.id} (sub-SAM ${c.node})` : c.id));
  const items = (state.verdict?.items ?? []).filter((i) => !i.pass).map((i) => i.id);
  const parts = [];
  if (failed.length) parts.push(`failed checks: ${failed.join(", ")}`);
  if (items.length) parts.push(`review failed items: ${items.join(", ")}`);
  if (state.verdict?.critique) parts.push(state.verdict.critique);
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
