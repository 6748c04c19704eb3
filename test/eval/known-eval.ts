// A hand-made eval for the statistics' unit tests: one task with two variants (nl, ex), three
// scripted models: `pass` passes every trial, `half` the even repeats, `never` none.
import { makePlan } from "../../runner/eval/plan.ts";
import type { Suite } from "../../runner/eval/suite.ts";
import type { TrialResult, TrialStatus } from "../../runner/eval/trial-result.ts";

export const suite: Suite = {
  name: "hand",
  source: "/suites/hand.yaml",
  tasks: [
    {
      name: "t",
      dir: "/suites/t",
      variants: [
        { name: "nl", file: "/suites/t/task.nl.md", sha256: "x" },
        { name: "ex", file: "/suites/t/task.ex.md", sha256: "y" },
      ],
    },
  ],
  limits: {},
};
const models = ["pass", "half", "never"].map((label) => ({ label, specs: [`scripted:/m/${label}.yaml`] }));

export function planOf(repeats: number, budgetUsd: number | null = null) {
  return makePlan({ suite, models, repeats, concurrency: 2, budgetUsd, engine: "local", backend: "docker" });
}

export function result(
  plan: ReturnType<typeof planOf>,
  trialId: string,
  status: TrialStatus,
  extra: Partial<TrialResult> = {},
): TrialResult {
  const t = plan.trials.find((x) => x.trialId === trialId);
  if (!t) throw new Error(`no trial ${trialId}`);
  return {
    version: 1,
    evalId: plan.evalId,
    trialId,
    task: t.task,
    variant: t.variant,
    model: t.model,
    scripted: true,
    repeat: t.repeat,
    status,
    verdict: status === "pass" ? "PASSED" : status === "fail" ? "FAILED" : "ERROR",
    exitCode: status === "pass" ? 0 : 1,
    cause: "-",
    iterations: 1,
    wallMs: 1000,
    tokens: { input: 10, output: 5, cacheRead: 30, cacheWrite: 20 },
    cacheReadShare: 0.5,
    usd: 0,
    toolCalls: 1,
    toolRejections: 0,
    approvalsWaited: 0,
    runId: `run-${trialId}`,
    runDir: `/runs/run-${trialId}`,
    startedAt: "2026-01-01T00:00:00.000Z",
    endedAt: "2026-01-01T00:00:01.000Z",
    ...extra,
  };
}

/** pass passes every repeat, half the even repeats, never none; 4 repeats, both variants. */
export function knownEval() {
  const plan = planOf(4);
  const results = plan.trials.map((t) =>
    result(
      plan,
      t.trialId,
      t.model === "pass" || (t.model === "half" && t.repeat % 2 === 0) ? "pass" : "fail",
    ),
  );
  return { plan, results };
}
