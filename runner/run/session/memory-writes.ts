// What a run writes into memory: after a failed review, task memory (what was tried, what failed,
// what to fix: the next pre-scan reads it); after the final review, the group's memory and the
// global proposals (only `scifi memory accept` puts a proposal into global memory).

import { quoteWithin } from "../../agents/brief-budget.ts";
import { codeSpan, fenceBlock, inlineText } from "../../markdown-quote.ts";
import { appendEntry } from "../../memory/entries.ts";
import { homePaths } from "../../paths.ts";
import type { CheckOutcome, Outcome, RecordedVerdict, WorkReport } from "../../run-folder/state.ts";
import type { SamNode } from "../../sam/types.ts";
import type { RunSession } from "./session.ts";

/** The failed review writes what was tried and what to fix; the next pre-scan reads it. */
export async function writeFailureMemory(session: RunSession, node: SamNode): Promise<void> {
  const { state } = session;
  await appendEntry(session.folder.files.memory, {
    id: `${state.runId}/it${state.iteration}/review`,
    time: new Date().toISOString(),
    runId: state.runId,
    role: "review",
    title: `Iteration ${state.iteration}: review failed ${node.id}`,
    body: failureMemoryBody({
      node,
      iteration: state.iteration,
      direction: state.direction,
      work: state.work,
      failedChecks: (state.checks ?? []).filter((c) => !c.passed),
      verdict: state.verdict,
    }),
  });
}

export interface FailureFacts {
  node: Pick<SamNode, "id" | "title">;
  iteration: number;
  direction?: string | undefined;
  work?: WorkReport | undefined;
  failedChecks: CheckOutcome[];
  verdict?: Pick<RecordedVerdict, "findings" | "fixes"> | undefined;
}

/**
 * The task-memory entry's body. Every text the runner did not choose (a claim, a summary, check
 * output, findings, fixes, even the SAM's titles and commands) goes through markdown-quote: a
 * multi-line text is a fenced block nothing in it can close, a line is plain text with its marks
 * escaped, so no agent text reads as a section, a list item or a line of the runner's.
 */
export function failureMemoryBody(facts: FailureFacts): string {
  const { node, work, verdict } = facts;
  const parts = [
    `Node ${codeSpan(node.id)} (${inlineText(node.title)}), iteration ${facts.iteration}, direction: ${inlineText(facts.direction ?? "-")}.`,
    work?.claim !== undefined
      ? `**Tried:**\n\n${quoted(work.claim, WORK_TEXT)}`
      : `**Tried:** no claim (${inlineText(work?.exit ?? "no work")})`,
    work?.summary ? `**Work summary:**\n\n${quoted(work.summary, WORK_TEXT)}` : "",
    facts.failedChecks.length
      ? `**Failed checks:**\n\n${facts.failedChecks.map(failedCheckEntry).join("\n\n")}`
      : "",
    verdict?.findings.length ? `**Findings:**\n\n${listOf(verdict.findings)}` : "",
    verdict?.fixes.length ? `**Fixes for the next attempt:**\n\n${listOf(verdict.fixes)}` : "",
  ];
  return parts.filter((part) => part !== "").join("\n\n");
}

/**
 * One agent text in a memory entry holds at most this many tokens (by the budget's estimate): the
 * agent chooses its claim's length (report_done has no cap), and an entry it filled would make a
 * pre-scan under a small window show that entry by its title alone, losing the runner's failed
 * checks and the review's fixes beside it (a41e).
 */
export const ENTRY_QUOTE_TOKENS = 1000;

/** Where the whole work report is: the entry's cut says so. */
const WORK_TEXT = "the run's state (state.json: work) and on the audit tape (the report_done call)";
/** Where the whole check output is. */
const CHECK_TEXT = "the run's state (state.json: checks) and its history (history.jsonl: the check event)";

/** Agent text fenced within ENTRY_QUOTE_TOKENS, the runner's note on a cut after the fence. */
function quoted(text: string, where: string, keep: "start" | "end" = "start"): string {
  const quote = quoteWithin(text, ENTRY_QUOTE_TOKENS, where, keep);
  return `${fenceBlock(quote.text)}${quote.note ? `\n\n${quote.note}` : ""}`;
}

/** One list item a line: each item's text escaped (its line breaks shown, never new items). */
export function listOf(items: readonly string[]): string {
  return items.map((item) => `- ${inlineText(item)}`).join("\n");
}

/** A failed check in task memory: what ran, how it ended, and the end of what it printed. */
function failedCheckEntry(check: CheckOutcome): string {
  const where = check.node ? ` (sub-SAM ${codeSpan(check.node)})` : "";
  const how = check.timedOut ? "timed out" : `exit ${check.exitCode}`;
  const tail = check.output.trim().split("\n").slice(-20).join("\n");
  return `Check ${codeSpan(check.id)}${where}: ${how}: ${codeSpan(check.command.trim())}\n\n${quoted(tail, CHECK_TEXT, "end")}`;
}

/** The final review's suggestions: the group's memory, and global proposals a person decides on. */
export async function writeSuggestions(
  session: RunSession,
  outcome: Outcome,
  suggestions: { group_suggestions: string[]; global_suggestions: string[] },
): Promise<void> {
  const { state, sam } = session;
  // A replay re-asks the recorded run's questions; its answers are already in shared memory.
  if (session.model.memoryAsOf !== undefined) return;
  const paths = homePaths(session.home);
  const entry = (id: string, items: string[]) => ({
    id: `${state.runId}/final/${id}`,
    time: new Date().toISOString(),
    runId: state.runId,
    role: "final_review",
    title: `${sam.metadata.name}: ${outcome.status} after ${state.iteration} iteration(s)`,
    body: listOf(items),
  });
  const group = sam.metadata.group;
  if (group && suggestions.group_suggestions.length > 0) {
    await appendEntry(paths.groupMemory(group), entry("group", suggestions.group_suggestions));
  }
  // Global suggestions are proposals: only `scifi memory accept` puts one into global memory.
  if (suggestions.global_suggestions.length > 0) {
    await appendEntry(paths.globalProposed, entry("global", suggestions.global_suggestions));
  }
}
