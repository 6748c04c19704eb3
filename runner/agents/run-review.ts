// The review agent as an agent: one conversation with read-only tools in a sandbox of its own (the
// task folder mounted read-only, no process of the work pass alive), one retry when the verdict is
// not valid, and the sandbox stopped whatever happens. The runner combines the verdict with the
// check outcomes; a review can fail a node whose checks passed, never pass one whose checks failed.

import { RunEnding } from "../run-ending.ts";
import type { CheckOutcome, WorkReport } from "../run-folder/state.ts";
import type { SamNode } from "../sam/types.ts";
import type { Sandbox } from "../sandbox/types.ts";
import { ReviewVerdict, reviewInput, verdictProblems } from "./review.ts";
import { parseJsonText } from "./structured.ts";

/** How one review conversation ended: with an answer (JSON or text), or without one and why. */
export type ReviewAnswer =
  | {
      json?: unknown;
      text: string /** the reply's source, when the server says (a script line) */;
      origin?: string;
    }
  | { noAnswer: string };

export interface ReviewOptions {
  node: SamNode;
  work: WorkReport;
  checks: readonly CheckOutcome[];
  /** Appended to the brief (e.g. that hidden checks exist). */
  note?: string;
  /** The model's prompt budget (Model.contextBudget): agent text in the brief is quoted within a share. */
  budget?: number | undefined;
  /** Starts the review's own sandbox (a fresh one: the review never runs where the agent ran). */
  openSandbox(): Promise<Sandbox>;
  /** One review conversation with the model in that sandbox, starting from `brief`. */
  converse(brief: string, sandbox: Sandbox): Promise<ReviewAnswer>;
}

export class ReviewFailed extends RunEnding {
  override name = "ReviewFailed";
  constructor(message: string) {
    super(message, { status: "failed", limit: "agent_reply" });
  }
}

/** Runs the review of one node; throws ReviewFailed when no valid verdict came after one retry. */
export async function runReview(options: ReviewOptions): Promise<ReviewVerdict> {
  const { node } = options;
  const sandbox = await options.openSandbox();
  try {
    const brief = reviewInput(node, options.work, options.checks, options.budget) + (options.note ?? "");
    let answer = await options.converse(brief, sandbox);
    let first = "";
    for (let attempt = 0; ; attempt++) {
      const problem = verdictProblem(answer, node);
      if (typeof problem !== "string") return problem;
      const named = `${"origin" in answer && answer.origin ? `reply ${answer.origin}: ` : ""}${problem}`;
      if (attempt >= 1)
        throw new ReviewFailed(
          `the review agent gave no valid verdict twice: ${first}; the retry: ${named}${SHAPES}`,
        );
      first = named;
      // One retry with the reason, continuing from the same brief.
      const retry = `Your verdict was rejected: ${problem}\nAnswer with one JSON object only, judging every item id: ${node.items.map((i) => i.id).join(", ")}.`;
      try {
        answer = await options.converse(`${brief}\n\n${retry}`, sandbox);
      } catch (error) {
        // A retry without an answer (no scripted reply left): the verdict that did not fit is the cause.
        if (!(error instanceof Error) || error.name !== "ScriptError") throw error;
        throw new ReviewFailed(
          `the review agent's verdict did not fit: ${first}; the retry got no answer: ${(error as Error).message}${SHAPES}`,
        );
      }
    }
  } finally {
    await sandbox.stop().catch(() => undefined);
  }
}

/** Where a user finds the verdict's shape (generated from ReviewVerdict). */
const SHAPES = " (the reply shape of every role: docs/scripted.md)";

function verdictProblem(answer: ReviewAnswer, node: SamNode): ReviewVerdict | string {
  if ("noAnswer" in answer) return `the review ended without a verdict (${answer.noAnswer})`;
  const parsed = ReviewVerdict.safeParse(answer.json ?? parseJsonText(answer.text));
  if (!parsed.success)
    return parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
  const problems = verdictProblems(node, parsed.data);
  return problems.length > 0 ? problems.join("; ") : parsed.data;
}
