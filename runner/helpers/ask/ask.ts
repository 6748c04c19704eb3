// `scifi ask`: one model call with the documents as context, then the deterministic guard.
import type { Model } from "../../llm/types.ts";
import { renderPrompt } from "../prompt.ts";
import { replyText } from "../reply.ts";
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

export async function askScifi(options: AskOptions): Promise<GuardResult> {
  const system = renderPrompt(new URL("./ask.md", import.meta.url), {
    documents: renderDocuments(options.documents),
  });
  const response = await options.model.complete({
    role: "ask",
    kind: "control",
    rank: options.rank ?? 1,
    system,
    messages: [{ role: "user", content: [{ type: "text", text: options.question }] }],
    maxTokens: 3000,
    meta: { runId: options.runId },
  });
  return guardAnswer(
    replyText(response),
    options.commands,
    options.documents.map((d) => d.id),
  );
}
