// What a SAM's checks are, in one place for `scifi validate`, `scifi plan` and the report: how many
// run and compare stages, and which Expectation items have no check at all (judged by the review
// alone, which a lenient or fooled review can pass).
import { isCompareStage } from "./check-blocks.ts";
import type { SamNode } from "./types.ts";

export interface CheckSummary {
  runStages: number;
  compareStages: number;
  /** Items without a check, with the start of their text. */
  reviewOnly: { id: string; text: string }[];
}

export function checkSummary(root: SamNode): CheckSummary {
  const summary: CheckSummary = { runStages: 0, compareStages: 0, reviewOnly: [] };
  const walk = (node: SamNode): void => {
    for (const item of node.items) {
      if (item.checks.length === 0) summary.reviewOnly.push({ id: item.id, text: firstLine(item.text) });
      for (const check of item.checks) {
        if (isCompareStage(check)) summary.compareStages++;
        else summary.runStages++;
      }
    }
    node.children.forEach(walk);
  };
  walk(root);
  return summary;
}

/** `root/e2 ("TopModule does not …")`, a line per item, for people. */
export function reviewOnlyLine(summary: CheckSummary): string | undefined {
  if (summary.reviewOnly.length === 0) return undefined;
  return `judged by the review alone (no check): ${summary.reviewOnly.map((i) => `${i.id} (${JSON.stringify(i.text)})`).join(", ")}`;
}

function firstLine(text: string): string {
  const line = text.split("\n")[0]?.trim() ?? "";
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
