// A single call's brief after the provider refused it as too long (its tokenizer counted more than
// the runner's estimate: CJK text or emoji under a byte-fallback tokenizer). As a pass does
// (ContextKeeper.refused), the budget becomes 80 % of the refused request's estimate and the brief
// is built again under it: by the caller's own builder (fitMemory, newestLines and the quotes take
// the budget), or, for a caller without one, by cutting the largest text of the brief. Everything
// is a function of the refused request, so a replay that meets the recorded refusal sends the same
// second request.
import { estimateRequest, estimateTokens } from "../llm/context-window.ts";
import type { Message, ModelRequest } from "../llm/types.ts";
import { type BriefPart, FILL_SHARE, quoteWithin } from "./brief-budget.ts";

/** A brief as sent: its messages and its parts, named for the error when it does not fit. */
export interface Brief {
  messages: Message[];
  parts: readonly BriefPart[];
}

/** What a single call (structuredCall) knows of its brief besides the first request. */
export interface BriefOptions {
  /** The brief's parts, named for the error when the request does not fit the model's budget. */
  parts: readonly BriefPart[];
  /** Builds the brief again for a lower budget (after a refusal for length). */
  rebuild?: (budget: number) => Brief;
  /** Told when a refusal for length lowered the budget and the rebuilt brief is sent: the history records it. */
  onRetried?: (retry: RefusedRetry) => void;
}

/** A retry after a refusal for length, as the history records it (a `context` event, `retried`). */
export interface RefusedRetry {
  /** The lowered budget the second request is kept under. */
  budget: number;
  /** Estimated prompt tokens of the refused request and of the one sent again. */
  tokensBefore: number;
  tokensAfter: number;
}

/** Where the runner says the text cut from a refused brief is. */
export const REFUSED_WHERE = "the audit tape (the refused request before this one)";

type Sized = Pick<ModelRequest, "system" | "messages" | "tools" | "jsonSchema" | "workspaceContext">;

/** The refused request's estimate and the budget from here on: 80 % of it. */
export function loweredBudget(refused: Sized): { estimate: number; budget: number } {
  const estimate = estimateRequest(refused);
  return { estimate, budget: Math.floor(0.8 * estimate) };
}

/** A request's estimated prompt tokens. */
export function estimateOf(request: Sized): number {
  return estimateRequest(request);
}

/**
 * The brief (the request's messages) shortened to the fill share of `budget` for a caller that
 * cannot build it again: its largest text is cut (its start kept), with the runner's note after it.
 */
export function shortenedBrief(request: Sized, budget: number, parts: readonly BriefPart[]): Brief {
  const excess = estimateRequest(request) - Math.floor(FILL_SHARE * budget);
  let largest: { m: number; b: number; tokens: number } | undefined;
  request.messages.forEach((message, m) => {
    message.content.forEach((block, b) => {
      if (block.type !== "text") return;
      const tokens = estimateTokens(block.text);
      if (!largest || tokens > largest.tokens) largest = { m, b, tokens };
    });
  });
  const target = largest;
  if (excess <= 0 || target === undefined) return { messages: [...request.messages], parts };
  const messages = request.messages.map((message, m) =>
    m !== target.m
      ? message
      : {
          ...message,
          content: message.content.map((block, b) => {
            if (b !== target.b || block.type !== "text") return block;
            const quote = quoteWithin(block.text, Math.max(0, target.tokens - excess), REFUSED_WHERE);
            return { ...block, text: `${quote.text}${quote.note ? `\n\n${quote.note}` : ""}` };
          }),
        },
  );
  return { messages, parts };
}
