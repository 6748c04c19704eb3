// A hand-written eval folder that follows the contracts (runner/eval/summary.ts, trial-result.ts),
// with hostile names, for the eval page's tests. Numbers are worked out by hand: model A (scripted)
// passes 2 of 2, model B (not scripted, a hostile name) passes 1 of 2 and has 1 infrastructure error.
// Wilson 95 %: 2/2 -> [0.342372, 1], 1/2 -> [0.094529, 0.905471].
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { EvalSummary, GroupSummary } from "../../runner/eval/summary.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { modelVariantSummaries, variantTable } from "../../runner/eval/variant-table.ts";

export const MODEL_A = "scripted:evals/always.yaml";
export const MODEL_B = 'gpt"><img src=x onerror=alert(1)>';
export const TASK = "fit<script>alert('task')</script>";
export const HOSTILE_CAUSE = '</td><script>alert("cause")</script>';
/** A run folder named like a URL: the link to it must stay a relative path. */
export const URL_LIKE_RUN = "javascript:alert(1)";

export interface EvalFixture {
  evalDir: string;
  /** Run folders: A r0 (with report.html), A r1 (without), B r0 (URL-like name, with report.html). */
  runs: { a0: string; a1: string; b0: string };
}

const stat = (values: number[]) => {
  const n = values.length;
  const mean = values.reduce((s, v) => s + v, 0) / n;
  const sd = n < 2 ? 0 : Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1));
  const sorted = [...values].sort((x, y) => x - y);
  const median =
    n % 2 ? (sorted[(n - 1) / 2] as number) : ((sorted[n / 2 - 1] as number) + (sorted[n / 2] as number)) / 2;
  return { n, mean, se: n < 2 ? 0 : sd / Math.sqrt(n), median };
};

function trial(
  evalId: string,
  over: Partial<TrialResult> & Pick<TrialResult, "trialId" | "model" | "repeat" | "status">,
): TrialResult {
  return {
    version: 1,
    evalId,
    task: TASK,
    variant: "nl",
    scripted: false,
    verdict: over.status === "pass" ? "PASSED" : over.status === "fail" ? "FAILED" : "ERROR",
    exitCode: over.status === "pass" ? 0 : 1,
    cause: over.status === "pass" ? "verified" : HOSTILE_CAUSE,
    iterations: 1,
    wallMs: 2000,
    tokens: { input: 100, output: 50, cacheRead: 0, cacheWrite: 0 },
    cacheReadShare: 0,
    usd: 0,
    toolCalls: 3,
    toolRejections: 0,
    approvalsWaited: 0,
    runId: "",
    runDir: "",
    startedAt: "2026-12-01T10:00:00.000Z",
    endedAt: "2026-12-01T10:00:02.000Z",
    ...over,
  };
}

export function writeEvalFixture(root: string): EvalFixture {
  const evalId = "e-20261201-fixture";
  const evalDir = join(root, "evals", evalId);
  const runsDir = join(root, "runs");
  const runs = { a0: join(runsDir, "run-a0"), a1: join(runsDir, "run-a1"), b0: join(runsDir, URL_LIKE_RUN) };
  for (const dir of Object.values(runs)) mkdirSync(dir, { recursive: true });
  for (const dir of [runs.a0, runs.b0])
    writeFileSync(
      join(dir, "report.html"),
      `<!doctype html><title>run report ${dir.split("/").at(-1)}</title><h1>run</h1>`,
    );
  const trials: TrialResult[] = [
    trial(evalId, {
      trialId: "fit.nl.a.r0",
      model: MODEL_A,
      scripted: true,
      repeat: 0,
      status: "pass",
      iterations: 1,
      runId: "run-a0",
      runDir: runs.a0,
    }),
    trial(evalId, {
      trialId: "fit.nl.a.r1",
      model: MODEL_A,
      scripted: true,
      repeat: 1,
      status: "pass",
      iterations: 2,
      runId: "run-a1",
      runDir: runs.a1,
    }),
    trial(evalId, {
      trialId: "fit.nl.b.r0",
      model: MODEL_B,
      repeat: 0,
      status: "pass",
      iterations: 3,
      usd: 0.02,
      runId: URL_LIKE_RUN,
      runDir: runs.b0,
    }),
    trial(evalId, {
      trialId: "fit.nl.b.r1",
      model: MODEL_B,
      repeat: 1,
      status: "fail",
      iterations: 4,
      usd: 0.02,
      wallMs: 6000,
    }),
    trial(evalId, {
      trialId: "fit.nl.b.r2",
      model: MODEL_B,
      repeat: 2,
      status: "error",
      iterations: 0,
      usd: 0,
    }),
  ];
  const base = { n: 2, fails: 0, errors: 0 };
  const groupA: GroupSummary = {
    ...base,
    task: TASK,
    variant: "nl",
    model: MODEL_A,
    scripted: true,
    passes: 2,
    passRate: 1,
    wilson95: [0.342372, 1],
    usd: 0,
    usdPerPass: 0,
    passAtK: { "1": 1, "2": 1 },
    passHatK: { "1": 1, "2": 1 },
    iterations: stat([1, 2]),
    wallMs: stat([2000, 2000]),
    tokens: stat([150, 150]),
    usdPerTrial: stat([0, 0]),
    cacheReadShare: stat([0, 0]),
  };
  const groupB: GroupSummary = {
    ...base,
    task: TASK,
    variant: "nl",
    model: MODEL_B,
    scripted: false,
    passes: 1,
    fails: 1,
    errors: 1,
    passRate: 0.5,
    wilson95: [0.094529, 0.905471],
    usd: 0.04,
    usdPerPass: 0.04,
    passAtK: { "1": 0.5, "2": 1 },
    passHatK: { "1": 0.5, "2": 0 },
    iterations: stat([3, 4]),
    wallMs: stat([2000, 6000]),
    tokens: stat([150, 150]),
    usdPerTrial: stat([0.02, 0.02]),
    cacheReadShare: stat([0, 0]),
  };
  const pick = ({ n, passes, fails, errors, passRate, wilson95, usd, usdPerPass }: GroupSummary) => ({
    n,
    passes,
    fails,
    errors,
    passRate,
    wilson95,
    usd,
    usdPerPass,
  });
  // The model x variant totals from the same trials (their own unit tests check the arithmetic).
  const models = [
    { label: MODEL_A, slug: "a", specs: ["scripted:a.yaml"], scripted: true },
    { label: MODEL_B, slug: "b", specs: ["b"], scripted: false },
  ];
  const byModelVariant = modelVariantSummaries(models, ["nl"], trials, [groupA, groupB]);
  const summary: EvalSummary = {
    version: 1,
    evalId,
    computedAt: "2026-12-01T10:05:00.000Z",
    suite: "evals/examples",
    models: [MODEL_A, MODEL_B],
    variants: ["nl"],
    tasks: [TASK],
    repeats: 2,
    trials: { planned: 6, pass: 3, fail: 1, error: 1, pending: 1 },
    budget: { usd: 1, spentUsd: 0.04, stoppedByBudget: false },
    groups: [groupA, groupB],
    byModel: [
      { ...pick(groupA), model: MODEL_A, scripted: true },
      { ...pick(groupB), model: MODEL_B, scripted: false },
    ],
    byVariant: [
      {
        n: 4,
        passes: 3,
        fails: 1,
        errors: 1,
        passRate: 0.75,
        wilson95: [0.300634, 0.954416],
        usd: 0.04,
        usdPerPass: 0.04 / 3,
        variant: "nl",
      },
    ],
    byModelVariant,
    variantTable: variantTable(models, ["nl"], [groupA, groupB], byModelVariant),
    comparisons: [
      {
        a: MODEL_A,
        b: MODEL_B,
        cells: 1,
        meanDifference: 0.5,
        ci95: [-0.4, 1],
        pValue: 0.4,
        pValueHolm: 0.4,
        better: "not distinguishable",
        text: `${MODEL_A} and ${MODEL_B} are not distinguishable with 2 repeats`,
        method: "paired cells, normal approximation",
      },
    ],
    variantComparisons: [],
  };
  mkdirSync(evalDir, { recursive: true });
  writeFileSync(join(evalDir, "summary.json"), JSON.stringify(summary, null, 2));
  for (const t of trials) {
    mkdirSync(join(evalDir, "trials", t.trialId), { recursive: true });
    writeFileSync(join(evalDir, "trials", t.trialId, "result.json"), JSON.stringify(t, null, 2));
  }
  // A trial still running (no result yet) and one whose result breaks the contract.
  mkdirSync(join(evalDir, "trials", "fit.nl.b.r3"), { recursive: true });
  mkdirSync(join(evalDir, "trials", "fit.nl.a.r9"), { recursive: true });
  writeFileSync(join(evalDir, "trials", "fit.nl.a.r9", "result.json"), JSON.stringify({ version: 2 }));
  return { evalDir, runs };
}
