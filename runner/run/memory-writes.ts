// What a run writes into memory: after a failed review, task memory (what was tried, what failed,
// what to fix: the next pre-scan reads it); after the final review, the group's memory and the
// global proposals (only `scifi memory accept` puts a proposal into global memory).

import { appendEntry } from "../memory/entries.ts";
import { homePaths } from "../paths.ts";
import type { CheckOutcome, Outcome } from "../run-folder/state.ts";
import type { SamNode } from "../sam/types.ts";
import type { RunSession } from "./session.ts";

/** The failed review writes what was tried and what to fix; the next pre-scan reads it. */
export async function writeFailureMemory(session: RunSession, node: SamNode): Promise<void> {
  const { state } = session;
  const verdict = state.verdict;
  const failedChecks = (state.checks ?? []).filter((c) => !c.passed);
  const lines = [
    `Node ${node.id} (${node.title}), iteration ${state.iteration}, direction: ${state.direction ?? "-"}.`,
    "",
    `**Tried:** ${state.work?.claim ?? `no claim (${state.work?.exit ?? "no work"})`}`,
    state.work?.summary ? `**Work summary:** ${state.work.summary}` : "",
    failedChecks.length ? `**Failed checks:**\n${failedChecks.map(failedCheckEntry).join("\n")}` : "",
    verdict?.findings.length ? `**Findings:**\n${verdict.findings.map((f) => `- ${f}`).join("\n")}` : "",
    verdict?.fixes.length
      ? `**Fixes for the next attempt:**\n${verdict.fixes.map((f) => `- ${f}`).join("\n")}`
      : "",
  ].filter((line) => line !== "");
  await appendEntry(session.folder.files.memory, {
    id: `${state.runId}/it${state.iteration}/review`,
    time: new Date().toISOString(),
    runId: state.runId,
    role: "review",
    title: `Iteration ${state.iteration}: review failed ${node.id}`,
    body: lines.join("\n"),
  });
}

/** A failed check in task memory: what ran, how it ended, and the end of what it printed. */
function failedCheckEntry(check: CheckOutcome): string {
  const where = check.node ? ` (sub-SAM ${check.node})` : "";
  const how = check.timedOut ? "timed out" : `exit ${check.exitCode}`;
  const tail = check.output.trim().split("\n").slice(-20).join("\n");
  const fence = tail.includes("```") ? "~~~~" : "```";
  return `- ${check.id}${where}: ${how}: \`${check.command.trim()}\`\n  ${fence}text\n${tail
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n")}\n  ${fence}`;
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
    body: items.map((s) => `- ${s}`).join("\n"),
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
