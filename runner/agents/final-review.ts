// Final review (control agent): after the run ends, writes task-group and global suggestions.
import { z } from "zod";
import type { Model, ModelRequest, ModelResponse } from "../llm/types.ts";
import { fenceBlock, inlineText } from "../markdown-quote.ts";
import { promptHistoryLines } from "../memory/prompt-history.ts";
import { fillTemplate, promptFile } from "./prompt.ts";
import { structuredCall } from "./structured.ts";

export const FinalSuggestions = z.object({
  group_suggestions: z.array(z.string()).describe("Lessons written into the task group's memory."),
  global_suggestions: z
    .array(z.string())
    .describe("Proposals for global memory; a person accepts or rejects each (`scifi memory`)."),
});
export type FinalSuggestions = z.infer<typeof FinalSuggestions>;

export interface FinalReviewInput {
  /** The run (not in the prompt: it differs between two runs of the same task). */
  runId: string;
  title: string;
  outcome: string;
  reason: string;
  iterations: number;
  group: string;
  taskMemory: { text: string; ref: string; sha256: string };
  history: string;
  controlRank: number;
  meta: ModelRequest["meta"];
}

/** The final review's brief: the run's outcome, its task memory and its history, quoted. */
export function finalReviewBrief(
  input: Pick<
    FinalReviewInput,
    "title" | "outcome" | "reason" | "iterations" | "group" | "taskMemory" | "history"
  >,
): string {
  return fillTemplate("final-review.input.md", {
    title: input.title,
    outcome: input.outcome,
    reason: inlineText(input.reason),
    iterations: String(input.iterations),
    group: input.group,
    taskMemory: input.taskMemory.text.trim() || "(empty)",
    // No times, seqs or host paths (a replay of the same task must read the same prompt).
    history: input.history.trim() ? fenceBlock(promptHistoryLines(input.history), "jsonl") : "(empty)",
  });
}

export async function runFinalReview(
  model: Model,
  input: FinalReviewInput,
  onResponse?: (response: ModelResponse) => void,
): Promise<FinalSuggestions> {
  const user = finalReviewBrief(input);
  const injected = input.taskMemory.text.trim()
    ? [{ kind: "memory" as const, ref: input.taskMemory.ref, sha256: input.taskMemory.sha256 }]
    : [];
  const { value } = await structuredCall(
    model,
    {
      role: "final_review",
      kind: "control",
      rank: input.controlRank,
      system: promptFile("final-review.md"),
      messages: [{ role: "user", content: [{ type: "text", text: user }] }],
      injected,
      meta: input.meta,
    },
    FinalSuggestions,
    "final_suggestions",
    onResponse,
  );
  return value;
}
