// The one optional model call of `scifi evolve`: the recurring review findings summarised into a
// few lines a prompt could add. Optional (`--model`); without it the prompt proposal lists the
// findings themselves. The call goes through a helper session, so it is on an audit tape like every
// model call (runs/evolve-<time>-<rand>/); the scripted model is labelled as such in the proposal.
// Like every single call it is kept under the model's budget (runner/agents/brief-budget.ts): the
// findings are hostile text of any length and number, so each is quoted within its share, the least
// recurring are left out with the runner's note, and a request that still cannot fit is not sent.
import { readFileSync } from "node:fs";
import { assertFits, budgetFor, quoteShare, roomFor } from "../agents/brief-budget.ts";
import { replyCap } from "../helpers/budget.ts";
import { replyText } from "../helpers/reply.ts";
import type { HelperSession } from "../helpers/session.ts";
import { estimateTokens } from "../llm/context-window.ts";
import type { ModelRequest } from "../llm/types.ts";
import type { RecurringFinding } from "./stats.ts";

/** Where the runner says each whole finding is. */
export const FINDINGS_WHERE = "the named runs' review verdicts (state.json: verdict)";

export async function summariseFindings(
  session: HelperSession,
  findings: RecurringFinding[],
): Promise<{ text: string; model: string; scripted: boolean }> {
  const system = readFileSync(new URL("./summarise.md", import.meta.url), "utf8");
  const budget = budgetFor(session.model, "control", 1);
  const request = (listing: string): Omit<ModelRequest, "meta"> => ({
    role: "evolve",
    kind: "control",
    rank: 1,
    system,
    messages: [{ role: "user", content: [{ type: "text", text: `Recurring findings:\n${listing}` }] }],
  });
  const listing = listWithin(findings, budget, roomFor(budget, request("")));
  const sent = request(listing);
  assertFits(sent, budget, [{ name: "the recurring findings", tokens: estimateTokens(listing) }]);
  const response = await session.model.complete({
    ...sent,
    ...replyCap(session.model, "control", 1, 1500),
    ...(budget !== undefined ? { contextBudget: budget } : {}),
    meta: { runId: session.runId },
  });
  const text = replyText(response).trim();
  if (text === "") throw new Error("the model's summary of the findings was empty");
  return { text, model: response.model, scripted: response.provider === "scripted" };
}

/**
 * The findings as the request lists them, the most recurring first, within `room` tokens (all of
 * them, each whole, when the model has no known budget): each quoted within its share of the
 * budget, and the least recurring left out past the room, with the runner's note saying how many.
 */
export function listWithin(
  findings: readonly RecurringFinding[],
  budget: number | undefined,
  room: number | undefined,
): string {
  const ordered = [...findings].sort((a, b) => b.runs.length - a.runs.length);
  const lines = ordered.map((f) => {
    const quote = quoteShare(f.text, budget, FINDINGS_WHERE);
    return `- (${f.runs.length} runs) ${JSON.stringify(quote.text)}${quote.note ? ` ${quote.note}` : ""}`;
  });
  const whole = lines.join("\n");
  if (room === undefined || estimateTokens(whole) <= room) return whole;
  const note = (left: number) =>
    `[scifi left out the ${left} least recurring of these ${lines.length} findings to keep the request inside the model's context window; each is in ${FINDINGS_WHERE}.]`;
  // The note's words are counted with room for its numbers.
  let used = estimateTokens(note(lines.length)) + 8;
  let kept = 0;
  for (const line of lines) {
    const cost = estimateTokens(`${line}\n`);
    if (used + cost > room) break;
    used += cost;
    kept++;
  }
  return [...lines.slice(0, kept), note(lines.length - kept)].join("\n");
}
