// The helpers' single calls under the model's budget, like the run's (runner/agents/brief-budget.ts):
// a helper's own `max_tokens` is sent only to a model without a known window; with one, the entry's
// reply reservation is sent (what the gateway's budget was computed against: a larger `max_tokens`
// would pass the window, as make-task's 8,000 did on an 8,192-token vLLM).
import { budgetFor } from "../agents/brief-budget.ts";
import type { Model, ModelKind } from "../llm/types.ts";

/** `{ maxTokens: own }` for a model without a known budget, else nothing (the reservation is sent). */
export function replyCap(model: Model, kind: ModelKind, rank: number, own: number): { maxTokens?: number } {
  return budgetFor(model, kind, rank) === undefined ? { maxTokens: own } : {};
}
