// Review (control agent): judges each Expectation item of a node with evidence it gathers through
// read-only tools, and returns a structured verdict. The runner combines it with the check results:
// the review can fail a node whose checks passed, never pass one whose checks failed.
import { z } from "zod";
import { codeSpan, fenceBlock, inlineText } from "../markdown-quote.ts";
import type { CheckOutcome, RecordedVerdict, WorkReport } from "../run-folder/state.ts";
import type { SamNode } from "../sam/types.ts";
import { QUOTE_SHARE, quoteShare, quoteWithin } from "./brief-budget.ts";
import { fillTemplate, promptFile } from "./prompt.ts";

export const ReviewVerdict = z.object({
  items: z
    .array(
      z.object({
        id: z.string().describe("An Expectation item id of the node (`root/e1`, `root/1/e2`)."),
        pass: z.boolean().describe("Whether the item holds on the delivered work."),
        evidence: z.string().describe("What shows it: files, outputs, check results."),
      }),
    )
    .describe("One entry per Expectation item id."),
  findings: z.array(z.string()).describe("What the review found (shown in the report)."),
  fixes: z.array(z.string()).describe("What the next iteration must fix (goes into task memory)."),
  rank_adjustment: z
    .union([z.literal(-1), z.literal(0), z.literal(1)])
    .describe("Suggested change of the work model's rank for the next pass."),
  blocked: z
    .object({ reason: z.string().min(1).describe("Why a human is needed.") })
    .optional()
    .describe("Only when the task cannot go on without a human: the run ends blocked."),
}) satisfies z.ZodType<RecordedVerdict>;
export type ReviewVerdict = z.infer<typeof ReviewVerdict>;

export function reviewSystem(): string {
  return promptFile("review.md");
}

/** Where the brief says a cut agent text is whole (no host path: a replay compares the brief). */
const WORK_REPORT = "the run's state (state.json: work) and on the audit tape (the report_done call)";
const CHECK_OUTPUT = "the run's state (state.json: checks) and the report";

/**
 * The review's brief. A brief is never elided from a pass, so with a model `budget` the agent's
 * claim and summary and each check's output tail are quoted within a share of it, cut with the
 * runner's note (outside the quote) saying where the whole text is.
 */
export function reviewInput(
  node: SamNode,
  report: WorkReport,
  checks: readonly CheckOutcome[],
  budget?: number,
): string {
  const items = node.items.map((item) => `- **${item.id}**: ${item.text.trim()}`).join("\n");
  // The claim, the summary and the check output are the agent's: each a fenced block nothing in it
  // closes (markdown-quote), so none of it reads as a check result or a section of the runner's.
  const quoted = (text: string) => {
    const quote = quoteShare(text, budget, WORK_REPORT);
    return `${fenceBlock(quote.text)}${quote.note ? `\n\n${quote.note}` : ""}`;
  };
  const reportText =
    report.exit === "done"
      ? `Claim:\n\n${quoted(report.claim ?? "")}\n\nSummary:\n\n${quoted(report.summary ?? "")}`
      : `The work pass ended without a claim (${inlineText(report.exit)}).`;
  const checkText =
    checks.length === 0
      ? "(this node has no deterministic checks)"
      : checks.map((c) => checkEntry(c, budget)).join("\n\n");
  return fillTemplate("review.input.md", {
    node: node.id,
    title: node.title,
    todo: node.todo.trim(),
    items: items || "(no items)",
    report: reportText,
    checks: checkText,
  });
}

/** Every item must be judged exactly once; returns what is missing or unknown. */
export function verdictProblems(node: SamNode, verdict: ReviewVerdict): string[] {
  const expected = new Set(node.items.map((item) => item.id));
  const seen = new Set(verdict.items.map((item) => item.id));
  const problems: string[] = [];
  for (const id of expected) if (!seen.has(id)) problems.push(`item '${id}' has no verdict`);
  for (const id of seen)
    if (!expected.has(id)) problems.push(`'${id}' is not an Expectation item of this node`);
  return problems;
}

/** One check's result for the review: the runner's line, then the output's tail in a fence. */
function checkEntry(c: CheckOutcome, budget: number | undefined): string {
  const lines = c.output.trim().split("\n").slice(-15).join("\n");
  // Fifteen long lines can pass a small window too: the tail keeps its end, within a share.
  const quote =
    budget === undefined
      ? { text: lines }
      : quoteWithin(lines, Math.floor(QUOTE_SHARE * budget), CHECK_OUTPUT, "end");
  const tail = quote.text;
  const of = c.node ? ` of sub-SAM ${codeSpan(c.node)}` : "";
  return `Check ${codeSpan(c.id)} (item ${codeSpan(c.itemId)}${of}): ${c.passed ? "PASSED" : "FAILED"} (exit ${c.timedOut ? "timeout" : c.exitCode}), command ${codeSpan(c.command.trim())}, output tail:\n\n${tail ? fenceBlock(tail) : "(no output)"}${quote.note ? `\n\n${quote.note}` : ""}`;
}
