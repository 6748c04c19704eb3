// Review: the control model judges the node's Expectation items with read-only tools, in a sandbox
// of its own that sees the task folder read-only. The node passes only when every check passed AND
// the review passed every item; a review cannot pass what the checks failed.
import { hiddenChecksNote } from "../../agents/prompt.ts";
import { type ReviewVerdict, reviewSystem } from "../../agents/review.ts";
import { type ReviewAnswer, ReviewFailed, runReview } from "../../agents/run-review.ts";
import { BudgetExceeded } from "../../llm/types.ts";
import type { CheckOutcome, Phase } from "../../run-folder/state.ts";
import type { SamNode } from "../../sam/types.ts";
import { reviewTools } from "../../tools/registry.ts";
import { type PassEvent, runPass } from "../session/conversation.ts";
import { exitReason } from "../session/outcomes.ts";
import type { RunSession } from "../session/session.ts";

export async function reviewPhase(session: RunSession): Promise<Phase> {
  const { state } = session;
  const node = session.node(session.plan().node);
  session.taskFolder.restore();
  session.emit({ phase: "review", step: 0, toolCalls: 0 });
  const checks = state.checks ?? [];
  const verdict: ReviewVerdict = await reviewNode(session, node, checks).catch((error: unknown) => {
    // No valid verdict after one retry: the iteration fails (recorded as a failed review).
    if (!(error instanceof ReviewFailed)) throw error;
    return { items: [], findings: [error.message], fixes: [], rank_adjustment: 0 as const };
  });
  const checksPassed = checks.every((c) => c.passed);
  const itemsPassed = node.items.every((item) => verdict.items.find((v) => v.id === item.id)?.pass === true);
  const passed = checksPassed && itemsPassed && !verdict.blocked;
  state.verdict = { ...verdict, passed };
  session.history.append({
    type: "verdict",
    iteration: state.iteration,
    node: node.id,
    passed,
    items: verdict.items.map((i) => ({ id: i.id, pass: i.pass, evidence: i.evidence })),
    checksPassed,
    findings: verdict.findings,
    fixes: verdict.fixes,
    rankAdjustment: verdict.rank_adjustment,
    ...(verdict.blocked ? { blocked: verdict.blocked.reason } : {}),
  });
  recordOverrides(session, checks, verdict);
  session.result(verdictResult(node.id, passed, checksPassed, verdict));
  return "review";
}

/** A review that passed an item whose check failed: overridden by the runner (the item fails). */
function recordOverrides(session: RunSession, checks: CheckOutcome[], verdict: ReviewVerdict): void {
  for (const item of verdict.items) {
    const failed = checks.filter((c) => c.itemId === item.id && !c.passed).map((c) => c.id);
    if (!item.pass || failed.length === 0) continue;
    session.recordIntegrity({
      kind: "review_override",
      role: "review",
      call: null,
      attempted: `the review passed item ${JSON.stringify(item.id)} whose check(s) ${failed.join(", ")} failed`,
      rule: "a review cannot pass what the checks failed",
      action: "the item and the node fail",
    });
  }
}

function verdictResult(
  node: string,
  passed: boolean,
  checksPassed: boolean,
  verdict: { items: { id: string; pass: boolean }[]; blocked?: { reason: string } },
): string {
  const failed = verdict.items.filter((i) => !i.pass).map((i) => i.id);
  // Which part failed the node; a review that passed every item is not reported as failing.
  const review = failed.length
    ? `the review failed ${failed.join(", ")}`
    : verdict.items.length
      ? "the review passed every item"
      : "no item verdicts";
  const why = verdict.blocked
    ? `: blocked: ${verdict.blocked.reason}`
    : passed
      ? ""
      : !checksPassed
        ? `: checks failed; ${review}`
        : `: ${review}`;
  return `review of ${node} ${passed ? "passed" : "FAILED"}${why}`;
}

/** The review agent, in a sandbox of its own that sees the task folder read-only. */
function reviewNode(session: RunSession, node: SamNode, checks: CheckOutcome[]): Promise<ReviewVerdict> {
  const request = {
    role: "review" as const,
    kind: "control" as const,
    rank: session.sam.metadata.rank?.control ?? 1,
    system: reviewSystem(),
    meta: session.meta(),
  };
  return runReview({
    node,
    note: hiddenChecksNote(session.hiddenCount),
    budget: session.model.contextBudget?.(request.kind, request.rank),
    work: session.state.work ?? { exit: "none" },
    checks,
    openSandbox: () => session.sandboxes.open("review"),
    converse: async (brief, sandbox): Promise<ReviewAnswer> => {
      const { exit } = await runPass({
        model: session.model,
        tools: reviewTools,
        toolContext: { ...session.toolContext, sandbox, allowCommands: undefined },
        limits: session.limits,
        budget: session.budget,
        request,
        brief,
        textReply: "answer",
        blockerNudge: () => "The runner: your tool calls keep failing. Answer now with the JSON verdict.",
        onEvent: (event: PassEvent) => session.onPassEvent(event),
        signal: session.stop.signal,
      });
      // A spent budget ends the run as such, never as a bad verdict that starts another paid iteration.
      if (exit.type === "budget") throw new BudgetExceeded(exit.reason);
      return exit.type === "answer"
        ? {
            json: exit.response.json,
            text: exit.text,
            ...(exit.response.origin ? { origin: exit.response.origin } : {}),
          }
        : { noAnswer: `${exit.type}: ${exitReason(exit)}` };
    },
  });
}
