// A real eval folder for the page's link tests, written the way `scifi eval` writes one: a plan
// (makePlan), the trials' result.json files, then summary.json from writeSummary (the engine's own
// statistics, flags and impossible variants). Tasks t0..: t0 also has an impossible variant (model
// 0 "cheats" it once), t1 passes every trial (flagged `every_trial_passed`); the rest mix passes,
// fails and infrastructure errors; one trial of t0 predates integrity counts.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type EvalPlan, makePlan } from "../../runner/eval/plan.ts";
import type { Suite } from "../../runner/eval/suite.ts";
import { writeSummary } from "../../runner/eval/summary-files.ts";
import type { TrialResult, TrialStatus } from "../../runner/eval/trial-result.ts";

export interface LinkedEvalOptions {
  models?: number;
  tasks?: number;
  repeats?: number;
  variants?: string[];
  /** Give t0 an impossible variant (default true). */
  impossible?: boolean;
}

export interface LinkedEval {
  evalDir: string;
  plan: EvalPlan;
  results: TrialResult[];
}

export const MODEL_LABELS = ["alpha", "beta", "gamma", "delta"];

export function writeLinkedEval(root: string, o: LinkedEvalOptions = {}): LinkedEval {
  const variants = o.variants ?? ["nl", "ex"];
  const suite: Suite = {
    name: "linked",
    source: join(root, "suite.yaml"),
    tasks: Array.from({ length: o.tasks ?? 3 }, (_, j) => ({
      name: `t${j}`,
      dir: join(root, `t${j}`),
      variants: [
        ...variants.map((v) => ({ name: v, file: join(root, `t${j}`, `task.${v}.md`), sha256: "x" })),
        ...(j === 0 && o.impossible !== false
          ? [
              {
                name: "impossible",
                file: join(root, "t0", "task.impossible.md"),
                sha256: "y",
                impossible: true as const,
              },
            ]
          : []),
      ],
    })),
    limits: {},
  };
  const models = MODEL_LABELS.slice(0, o.models ?? 3).map((label) => ({
    label,
    specs: [`scripted:/m/${label}.yaml`],
  }));
  const plan = makePlan({
    suite,
    models,
    repeats: o.repeats ?? 4,
    concurrency: 2,
    budgetUsd: null,
    engine: "local",
    backend: "docker",
    audit: false,
  });
  const evalDir = join(root, "evals", plan.evalId);
  const results = plan.trials.map((t): TrialResult => {
    const i = MODEL_LABELS.indexOf(t.model);
    const j = Number(t.task.slice(1));
    const k = variants.indexOf(t.variant);
    const r = t.repeat;
    const status: TrialStatus =
      t.variant === "impossible"
        ? i === 0 && r === 0
          ? "pass"
          : "fail"
        : j === 1
          ? "pass"
          : (i + j + k + r) % 7 === 3
            ? "error"
            : (r + i * k + j) % (i + 2) === 0
              ? "fail"
              : "pass";
    return {
      version: 1,
      evalId: plan.evalId,
      trialId: t.trialId,
      task: t.task,
      variant: t.variant,
      model: t.model,
      scripted: true,
      repeat: r,
      status,
      verdict: status === "pass" ? "PASSED" : status === "fail" ? "FAILED" : "ERROR",
      exitCode: status === "pass" ? 0 : 1,
      cause: status === "error" ? "the sandbox died" : "-",
      iterations: 1 + ((r + j) % 3),
      wallMs: 1000 * (1 + i + r),
      tokens: { input: 100 * (i + 1), output: 50, cacheRead: 10, cacheWrite: 0 },
      cacheReadShare: 0.1,
      usd: status === "error" ? 0.005 : 0.01 * (i + 1),
      toolCalls: 2,
      toolRejections: 0,
      approvalsWaited: 0,
      // One trial from before integrity counts: left out of the integrity figures, not read as none.
      ...(j === 0 && r === 2 && k === 0 ? {} : { integrity: r % 3 === 0 ? { shell_refused: 1 + i } : {} }),
      runId: `run-${t.trialId}`,
      runDir: join(root, "runs", `run-${t.trialId}`),
      startedAt: "2026-12-01T10:00:00.000Z",
      endedAt: "2026-12-01T10:00:01.000Z",
    };
  });
  for (const result of results) {
    const dir = join(evalDir, "trials", result.trialId);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "result.json"), JSON.stringify(result));
  }
  writeSummary(evalDir, plan, new Map(results.map((x) => [x.trialId, x])), false);
  return { evalDir, plan, results };
}
