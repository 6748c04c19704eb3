// Final review (control agent): after the run ends, writes task-group and global suggestions.
import { z } from "zod";
import { estimateTokens } from "../llm/context-window.ts";
import type { Model, ModelRequest, ModelResponse } from "../llm/types.ts";
import { fenceBlock, inlineText } from "../markdown-quote.ts";
import { promptHistoryLines } from "../memory/prompt-history.ts";
import { jsonSchemaOf } from "../tools/tool.ts";
import { budgetFor, fitMemory, HISTORY_SHARE, newestLines, roomFor } from "./brief-budget.ts";
import { fillTemplate, promptFile } from "./prompt.ts";
import type { Brief, RefusedRetry } from "./refused-brief.ts";
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

/**
 * The final review's brief: the run's outcome, its task memory and its history, quoted. Task memory
 * is the file's text (entry marks and all), shown as readMemory shows it, within `memoryTokens`.
 */
export function finalReviewBrief(
  input: Pick<
    FinalReviewInput,
    "title" | "outcome" | "reason" | "iterations" | "group" | "taskMemory" | "history"
  >,
  memoryTokens?: number,
  /** The model's budget: the history keeps its newest lines within HISTORY_SHARE of it. */
  budget?: number,
): string {
  const lines = input.history.trim() ? promptHistoryLines(input.history) : "";
  const history = newestLines(lines, budget && Math.floor(HISTORY_SHARE * budget));
  return fillTemplate("final-review.input.md", {
    title: input.title,
    outcome: input.outcome,
    reason: inlineText(input.reason),
    iterations: String(input.iterations),
    group: input.group,
    taskMemory: fitMemory(input.taskMemory.text, memoryTokens).text.trim() || "(empty)",
    // No times, seqs or host paths (a replay of the same task must read the same prompt).
    history: history.text.trim()
      ? `${fenceBlock(history.text, "jsonl")}${history.note ? `\n\n${history.note}` : ""}`
      : "(empty)",
  });
}

export async function runFinalReview(
  model: Model,
  input: FinalReviewInput,
  onResponse?: (response: ModelResponse) => void,
  /** Told when the provider refused the brief as too long and a shorter one is sent (the history records it). */
  onRetried?: (retry: RefusedRetry) => void,
): Promise<FinalSuggestions> {
  const system = promptFile("final-review.md");
  // The task memory gets what the rest of the brief leaves of the budget: the model's, or a lower
  // one after the provider refused the request as too long.
  const build = (budget: number | undefined): Brief => {
    const room = roomFor(budget, {
      system,
      messages: [
        {
          role: "user",
          content: [
            {
              type: "text",
              text: finalReviewBrief(
                { ...input, taskMemory: { ...input.taskMemory, text: "" } },
                undefined,
                budget,
              ),
            },
          ],
        },
      ],
      jsonSchema: { name: "final_suggestions", schema: jsonSchemaOf(FinalSuggestions) },
    });
    const user = finalReviewBrief(input, room, budget);
    return {
      messages: [{ role: "user", content: [{ type: "text", text: user }] }],
      parts: [
        { name: "the brief (outcome, task memory)", tokens: estimateTokens(user) },
        { name: "the history", tokens: estimateTokens(input.history) },
      ],
    };
  };
  const first = build(budgetFor(model, "control", input.controlRank));
  const injected = input.taskMemory.text.trim()
    ? [{ kind: "memory" as const, ref: input.taskMemory.ref, sha256: input.taskMemory.sha256 }]
    : [];
  const { value } = await structuredCall(
    model,
    {
      role: "final_review",
      kind: "control",
      rank: input.controlRank,
      system,
      messages: first.messages,
      injected,
      meta: input.meta,
    },
    FinalSuggestions,
    "final_suggestions",
    onResponse,
    { parts: first.parts, rebuild: build, ...(onRetried ? { onRetried } : {}) },
  );
  return value;
}
