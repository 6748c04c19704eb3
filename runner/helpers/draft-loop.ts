// The draft-and-repair loop the document-making helpers share: ask for a draft, check it, and if it
// is not yet right send the problems back as the next user turn, at most `maxTries` model calls.
import type { AgentRole, Message, Model } from "../llm/types.ts";
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
  maxTokens: number;
  maxTries: number;
  /** Checks one reply (its whole-document fence already taken off). */
  check(draft: string): DraftVerdict<T>;
}

/** The first accepted draft's result, or undefined when every try needed repair. */
export async function draftWithRepairs<T>(options: DraftLoopOptions<T>): Promise<T | undefined> {
  const messages: Message[] = [{ role: "user", content: [{ type: "text", text: options.ask }] }];
  for (let attempt = 1; attempt <= options.maxTries; attempt++) {
    const response = await options.model.complete({
      role: options.role,
      kind: "control",
      rank: options.rank,
      system: options.system,
      messages,
      maxTokens: options.maxTokens,
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
