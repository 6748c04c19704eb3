// `scifi ask`: one model call with the documents as context, then the deterministic guard.
import { assertFits, budgetFor } from "../../agents/brief-budget.ts";
import { estimateRequest, estimateTokens } from "../../llm/context-window.ts";
import type { Message, Model } from "../../llm/types.ts";
import { replyCap } from "../budget.ts";
import { renderPrompt } from "../prompt.ts";
import { replyText } from "../reply.ts";
import { chooseDocuments } from "./choose.ts";
import { type GuardResult, guardAnswer } from "./guard.ts";
import { renderDocuments, type SourceDocument } from "./sources.ts";

export interface AskOptions {
  question: string;
  model: Model;
  runId: string;
  documents: readonly SourceDocument[];
  /** Real command names (from `scifi --help`). */
  commands: readonly string[];
  rank?: number;
}

export interface AskResult extends GuardResult {
  /** Ids of the documents left out to fit the model's context window. */
  leftOut: string[];
}

export async function askScifi(options: AskOptions): Promise<AskResult> {
  const rank = options.rank ?? 1;
  const prompt = (documents: string, leftOut: readonly string[]) =>
    renderPrompt(new URL("./ask.md", import.meta.url), {
      documents,
      left_out:
        leftOut.length === 0
          ? ""
          : `\n\n# Documents left out\n\nThese were left out to keep the request inside the model's context window: ${leftOut.join("; ")}. If the answer may be in one of them, say so and name it; never cite one.`,
    });
  const messages: Message[] = [{ role: "user", content: [{ type: "text", text: options.question }] }];
  // The documents get the budget less the rest of the request (the list of left-out ids included).
  const budget = budgetFor(options.model, "control", rank);
  const allIds = options.documents.map((d) => d.id);
  const rest = estimateRequest({ system: prompt("", allIds), messages });
  const room = budget === undefined ? undefined : Math.max(0, budget - rest);
  const { chosen, leftOut } = chooseDocuments(options.documents, options.question, room);
  const system = prompt(renderDocuments(chosen), leftOut);
  assertFits({ role: "ask", system, messages }, budget, [
    { name: "the question", tokens: estimateTokens(options.question) },
  ]);
  const response = await options.model.complete({
    role: "ask",
    kind: "control",
    rank,
    system,
    messages,
    ...replyCap(options.model, "control", rank, 3000),
    ...(budget !== undefined ? { contextBudget: budget } : {}),
    meta: { runId: options.runId },
  });
  const guarded = guardAnswer(
    replyText(response),
    options.commands,
    chosen.map((d) => d.id),
  );
  return { ...guarded, leftOut };
}
