// The eval's statistics against values computed by hand (the formulas of docs/eval.md, worked out
// on paper for these counts): Wilson intervals, pass@k and pass^k, mean ± SE and median, USD per
// pass with errors paid for but not judged, per-model and per-variant totals (the comparisons:
// comparisons.test.ts), and the budget stop of the scheduler (no trial started once the budget is spent).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { driveEval } from "../../runner/eval/engine.ts";
import { writePlan } from "../../runner/eval/plan.ts";
import {
  passAtKOf,
  passHatKOf,
  sample,
  summarize,
  summaryCsv,
  wilson,
} from "../../runner/eval/statistics.ts";
import { writeTrialResult } from "../../runner/eval/trial.ts";
import type { TrialResult, TrialStatus } from "../../runner/eval/trial-result.ts";
import { knownEval, planOf, result } from "./known-eval.ts";

describe("formulas, against hand-computed values", () => {
  it("Wilson 95 % intervals", () => {
    const close = (got: [number, number], want: [number, number]) => {
      expect(got[0]).toBeCloseTo(want[0], 5);
      expect(got[1]).toBeCloseTo(want[1], 5);
    };
    // p = 1, n = 2: (1.9604 - 0.9604) / 2.9208 = 0.342372
    close(wilson(2, 2), [0.342372, 1]);
    // p = 0.5, n = 2: (1.4604 ± 1.184298) / 2.9208
    close(wilson(1, 2), [0.094529, 0.905471]);
    // p = 0, n = 4: 0 .. 0.9604 / 1.9604
    close(wilson(0, 4), [0, 0.4899]);
    // p = 0.75, n = 4: (1.2302 ± 0.640834) / 1.9604
    close(wilson(3, 4), [0.300636, 0.954415]);
    expect(wilson(0, 0)).toEqual([0, 1]);
  });

  it("pass@k (unbiased) and pass^k", () => {
    expect(passAtKOf(4, 2, 1)).toBeCloseTo(0.5, 12);
    expect(passAtKOf(4, 2, 2)).toBeCloseTo(1 - 1 / 6, 12); // 1 - C(2,2)/C(4,2)
    expect(passAtKOf(4, 2, 3)).toBe(1);
    expect(passAtKOf(4, 1, 2)).toBeCloseTo(0.5, 12); // 1 - C(3,2)/C(4,2) = 1 - 3/6
    expect(passAtKOf(4, 1, 3)).toBeCloseTo(0.75, 12); // 1 - C(3,3)/C(4,3)
    expect(passAtKOf(4, 0, 4)).toBe(0);
    expect(passHatKOf(4, 2, 1)).toBeCloseTo(0.5, 12);
    expect(passHatKOf(4, 2, 2)).toBeCloseTo(1 / 6, 12); // C(2,2)/C(4,2)
    expect(passHatKOf(4, 2, 3)).toBe(0);
    expect(passHatKOf(4, 4, 4)).toBe(1);
  });

  it("mean, standard error and median", () => {
    const s = sample([1, 2, 4]);
    expect(s.n).toBe(3);
    expect(s.mean).toBeCloseTo(7 / 3, 12);
    expect(s.se).toBeCloseTo(Math.sqrt(7 / 3) / Math.sqrt(3), 12); // sd² = (16 + 1 + 25) / 9 / 2
    expect(s.median).toBe(2);
    expect(sample([5, 1, 3, 10]).median).toBe(4);
    expect(sample([7])).toEqual({ n: 1, mean: 7, se: 0, median: 7 });
    expect(sample([])).toEqual({ n: 0, mean: 0, se: 0, median: 0 });
  });
});

describe("summarize", () => {
  it("cells, pass rates, pass@k, per-model and per-variant totals of a known eval", () => {
    const { plan, results } = knownEval();
    const summary = summarize(plan, results, { stoppedByBudget: false, now: new Date(0) });
    expect(summary.trials).toEqual({ planned: 24, pass: 12, fail: 12, error: 0, pending: 0 });
    expect(summary.variants).toEqual(["nl", "ex"]);
    const cell = (variant: string, model: string) =>
      summary.groups.find((g) => g.variant === variant && g.model === model);
    const half = cell("ex", "half");
    expect(half).toMatchObject({ n: 4, passes: 2, fails: 2, errors: 0, passRate: 0.5 });
    expect(half?.passAtK["2"]).toBeCloseTo(5 / 6, 12);
    expect(half?.passHatK["2"]).toBeCloseTo(1 / 6, 12);
    expect(Object.keys(half?.passAtK ?? {})).toEqual(["1", "2", "3", "4"]);
    expect(cell("nl", "pass")?.wilson95[0]).toBeCloseTo(0.5101, 4); // n = 4, p = 1: 1 / 1.9604
    expect(cell("nl", "never")).toMatchObject({ passes: 0, usdPerPass: null });
    expect(summary.byModel.map((m) => [m.model, m.n, m.passes])).toEqual([
      ["pass", 8, 8],
      ["half", 8, 4],
      ["never", 8, 0],
    ]);
    expect(summary.byVariant.map((v) => [v.variant, v.n, v.passes])).toEqual([
      ["nl", 12, 6],
      ["ex", 12, 6],
    ]);
    // tokens per trial: 10 + 5 + 30 + 20
    expect(cell("nl", "pass")?.tokens).toEqual({ n: 4, mean: 65, se: 0, median: 65 });
  });

  it("USD per pass counts what errors cost; errors are neither in n nor in the sample statistics", () => {
    const plan = planOf(4);
    const ids = plan.trials.filter((t) => t.variant === "nl" && t.model === "pass").map((t) => t.trialId);
    const statuses: TrialStatus[] = ["pass", "fail", "pass", "error"];
    const results = ids.map((id, i) =>
      result(plan, id, statuses[i] as TrialStatus, {
        usd: [0.1, 0.2, 0.3, 0.4][i] as number,
        iterations: [1, 2, 4, 9][i] as number,
      }),
    );
    const summary = summarize(plan, results, { stoppedByBudget: false });
    const g = summary.groups.find((x) => x.variant === "nl" && x.model === "pass");
    expect(g).toMatchObject({ n: 3, passes: 2, fails: 1, errors: 1 });
    expect(g?.passRate).toBeCloseTo(2 / 3, 12);
    expect(g?.usd).toBeCloseTo(1.0, 12);
    expect(g?.usdPerPass).toBeCloseTo(0.5, 12);
    expect(g?.iterations.mean).toBeCloseTo(7 / 3, 12); // the error's 9 iterations are not judged
    expect(summary.trials).toMatchObject({ pass: 2, fail: 1, error: 1, pending: 20 });
    expect(summary.budget.spentUsd).toBeCloseTo(1.0, 12);
  });

  it("a result counts once, and one outside the plan not at all", () => {
    const { plan, results } = knownEval();
    const stray = { ...result(plan, plan.trials[0]?.trialId ?? "", "pass"), trialId: "other.nl.pass.r9" };
    const summary = summarize(plan, [...results, results[0] as TrialResult, stray], {
      stoppedByBudget: false,
    });
    expect(summary.trials).toEqual({ planned: 24, pass: 12, fail: 12, error: 0, pending: 0 });
  });

  it("summary.csv: one row per cell, pass@k columns up to the repeats", () => {
    const { plan, results } = knownEval();
    const csv = summaryCsv(summarize(plan, results, { stoppedByBudget: false }))
      .trim()
      .split("\n");
    expect(csv).toHaveLength(1 + 6);
    const header = csv[0]?.split(",") ?? [];
    expect(header.slice(0, 5)).toEqual(["task", "variant", "model", "scripted", "n"]);
    expect(header).toContain("pass_at_4");
    const row = Object.fromEntries(header.map((h, i) => [h, csv[2]?.split(",")[i]]));
    expect(row).toMatchObject({ task: "t", variant: "nl", model: "half", passes: "2", pass_rate: "0.5" });
  });
});

describe("the budget stops scheduling", () => {
  it("once the results' spend reaches the budget, no further trial starts, and the summary says so", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-eval-budget-"));
    const plan = planOf(2, 0.25);
    const evalDir = join(home, "evals", plan.evalId);
    writePlan(evalDir, plan);
    const [a, b] = plan.trials;
    writeTrialResult(evalDir, result(plan, a?.trialId ?? "", "pass", { usd: 0.2 }));
    writeTrialResult(evalDir, result(plan, b?.trialId ?? "", "fail", { usd: 0.1 }));
    const lines: string[] = [];
    const outcome = await driveEval({ home, evalDir, plan, log: (l) => lines.push(l) });
    expect(outcome.ran).toEqual([]);
    expect(outcome.stoppedByBudget).toBe(true);
    expect(outcome.summary.budget).toEqual({
      usd: 0.25,
      spentUsd: expect.closeTo(0.3, 9),
      stoppedByBudget: true,
    });
    expect(outcome.summary.trials.pending).toBe(plan.trials.length - 2);
    expect(lines.join("\n")).toMatch(/budget spent: USD 0\.3000 of 0\.25; 10 trial\(s\) not started/);
  });
});
