// Review (control agent): judges each Expectation item of a node with evidence it gathers through
// read-only tools, and returns a structured verdict. The runner combines it with the check results:
// the review can fail a node whose checks passed, never pass one whose checks failed.
import { z } from "zod";
import { codeSpan, fenceBlock, inlineText } from "../markdown-quote.ts";
import type { CheckOutcome, RecordedVerdict, WorkReport } from "../run-folder/state.ts";
import type { SamNode } from "../sam/types.ts";
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

export function reviewInput(node: SamNode, report: WorkReport, checks: readonly CheckOutcome[]): string {
  const items = node.items.map((item) => `- **${item.id}**: ${item.text.trim()}`).join("\n");
  // The claim, the summary and the check output are the agent's: each a fenced block nothing in it
  // closes (markdown-quote), so none of it reads as a check result or a section of the runner's.
  const reportText =
    report.exit === "done"
      ? `Claim:\n\n${fenceBlock(report.claim ?? "")}\n\nSummary:\n\n${fenceBlock(report.summary ?? "")}`
      : `The work pass ended without a claim (${inlineText(report.exit)}).`;
  const checkText =
    checks.length === 0 ? "(this node has no deterministic checks)" : checks.map(checkEntry).join("\n\n");
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
function checkEntry(c: CheckOutcome): string {
  const tail = c.output.trim().split("\n").slice(-15).join("\n");
  const of = c.node ? ` of sub-SAM ${codeSpan(c.node)}` : "";
  return `Check ${codeSpan(c.id)} (item ${codeSpan(c.itemId)}${of}): ${c.passed ? "PASSED" : "FAILED"} (exit ${c.timedOut ? "timeout" : c.exitCode}), command ${codeSpan(c.command.trim())}, output tail:\n\n${tail ? fenceBlock(tail) : "(no output)"}`;
}
