// The draft-and-repair loop the document-making helpers share: ask for a draft, check it, and if it
// is not yet right send the problems back as the next user turn, at most `maxTries` model calls.
import { assertFits, budgetFor } from "../agents/brief-budget.ts";
import { estimateRequest, estimateTokens } from "../llm/context-window.ts";
import type { AgentRole, Message, Model } from "../llm/types.ts";
import { replyCap } from "./budget.ts";
import { replyText, unwrapDocument } from "./reply.ts";

/** A checked draft: accepted (`done`), or the text to keep as the model's turn and the repair request. */
export type DraftVerdict<T> = { done: T } | { reply: string; repair: string };

export interface DraftLoopOptions<T> {
  model: Model;
  role: AgentRole;
  runId: string;
  rank: number;
  system: string;
  /** The first user turn. */
  ask: string;
  /** The reply cap for a model without a known window (with one, the entry's reservation). */
  maxTokens: number;
  maxTries: number;
  /** Checks one reply (its whole-document fence already taken off). */
  check(draft: string): DraftVerdict<T>;
}

/** The first accepted draft's result, or undefined when every try needed repair. */
export async function draftWithRepairs<T>(options: DraftLoopOptions<T>): Promise<T | undefined> {
  const messages: Message[] = [{ role: "user", content: [{ type: "text", text: options.ask }] }];
  const budget = budgetFor(options.model, "control", options.rank);
  for (let attempt = 1; attempt <= options.maxTries; attempt++) {
    // Past the budget, the oldest repair rounds go (the ask and the newest draft and repair stay).
    let sent = messages;
    while (
      budget !== undefined &&
      sent.length > 3 &&
      estimateRequest({ ...options, messages: sent }) > budget
    )
      sent = [sent[0] as Message, ...sent.slice(3)];
    assertFits({ role: options.role, system: options.system, messages: sent }, budget, [
      { name: "the request", tokens: estimateTokens(options.ask) },
      {
        name: "the newest draft and its repair",
        tokens: estimateRequest({ system: "", messages: sent.slice(1) }),
      },
    ]);
    const response = await options.model.complete({
      role: options.role,
      kind: "control",
      rank: options.rank,
      system: options.system,
      messages: sent,
      ...replyCap(options.model, "control", options.rank, options.maxTokens),
      ...(budget !== undefined ? { contextBudget: budget } : {}),
      meta: { runId: options.runId, iteration: attempt },
    });
    const verdict = options.check(unwrapDocument(replyText(response)));
    if ("done" in verdict) return verdict.done;
    messages.push(
      { role: "assistant", content: [{ type: "text", text: verdict.reply }] },
      { role: "user", content: [{ type: "text", text: verdict.repair }] },
    );
  }
  return undefined;
}
