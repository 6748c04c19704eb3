// The paired comparisons against values worked out by hand (docs/eval.md, "Comparisons"): the
// stratified Wilson interval per side, MOVER, the exact conditional p-value, Holm's adjustment over
// the 3 model pairs and the 3 variant pairs of a 3-model eval, and wording whose sign is the sign
// of the numbers. Coverage and type-I error: comparisons-simulation.test.ts.
import { describe, expect, it } from "vitest";
import {
  exactStratifiedP,
  holm,
  pairedEstimate,
  stratifiedWilson,
  wilsonOfRate,
} from "../../runner/eval/comparisons.ts";
import { evalSummarySchema } from "../../runner/eval/page-load.ts";
import { summarize } from "../../runner/eval/statistics.ts";
import { knownEval, planOf, result } from "./known-eval.ts";

describe("the pieces, by hand", () => {
  it("Holm's step-down adjustment, in input order", () => {
    // sorted 0.01, 0.02, 0.03, 0.5 -> 4·0.01, max(0.04, 3·0.02), max(0.06, 2·0.03), max(0.06, 0.5)
    const got = holm([0.03, 0.01, 0.5, 0.02]);
    const want = [0.06, 0.04, 0.5, 0.06];
    for (const [i, p] of got.entries()) expect(p).toBeCloseTo(want[i] as number, 12);
    expect(holm([0.6, 0.9])).toEqual([1, 1]); // capped at 1
    expect(holm([])).toEqual([]);
  });

  it("the exact conditional p-value: a convolution of hypergeometrics", () => {
    // One stratum 4/4 vs 0/4: P(a has all 4 of the 4 passes) = 1 / C(8, 4) = 1/70, twice.
    expect(exactStratifiedP([{ passesA: 4, nA: 4, passesB: 0, nB: 4 }])).toBeCloseTo(2 / 70, 12);
    // Two strata 4/4 vs 2/4: each P(x = 4) = C(4,4)C(4,2)/C(8,6) = 6/28; both: (3/14)², twice.
    const s = { passesA: 4, nA: 4, passesB: 2, nB: 4 };
    expect(exactStratifiedP([s, s])).toBeCloseTo(2 * (3 / 14) ** 2, 12);
    // A stratum where everything passed carries no information; equal counts give p = 1.
    expect(exactStratifiedP([{ passesA: 3, nA: 3, passesB: 3, nB: 3 }])).toBe(1);
    expect(exactStratifiedP([{ passesA: 2, nA: 4, passesB: 2, nB: 4 }])).toBe(1);
    // Unequal n: 3/3 vs 0/1 -> P(x = 3 | 3 passes of 4) = C(3,3)C(1,0)/C(4,3) = 1/4, twice.
    expect(exactStratifiedP([{ passesA: 3, nA: 3, passesB: 0, nB: 1 }])).toBeCloseTo(0.5, 12);
  });

  it("the stratified Wilson interval: effective n = K² / Σ 1/n_k, corrected when passes or failures are few", () => {
    // 5/10 and 10/10: rate 0.75, n_eff = 4 / (0.1 + 0.1) = 20; 20·0.25 = 5 failures: uncorrected.
    const w = stratifiedWilson([5, 10], [10, 10]);
    expect(w.rate).toBe(0.75);
    const [lo, hi] = wilsonOfRate(0.75, 20);
    expect([w.low, w.high]).toEqual([lo, hi]);
    // 1/2 and 4/4: rate 0.75, n_eff = 4 / (1/2 + 1/4) = 16/3; 4/3 failures: corrected by 1/(2 n_eff).
    const c = stratifiedWilson([1, 4], [2, 4]);
    const nEff = 16 / 3;
    expect(c.low).toBeCloseTo(wilsonOfRate(0.75 - 1 / (2 * nEff), nEff)[0], 12);
    expect(c.high).toBeCloseTo(wilsonOfRate(0.75 + 1 / (2 * nEff), nEff)[1], 12);
  });

  it("the interval always contains its own point estimate (every count pattern of 2 strata x 3 trials)", () => {
    for (let code = 0; code < 4 ** 4; code++) {
      const d = [0, 1, 2, 3].map((i) => Math.floor(code / 4 ** i) % 4);
      const strata = [
        { passesA: d[0] as number, nA: 3, passesB: d[1] as number, nB: 3 },
        { passesA: d[2] as number, nA: 3, passesB: d[3] as number, nB: 3 },
      ];
      const e = pairedEstimate(strata);
      expect(e.ci95[0], JSON.stringify(d)).toBeLessThanOrEqual(e.meanDifference);
      expect(e.ci95[1], JSON.stringify(d)).toBeGreaterThanOrEqual(e.meanDifference);
      expect(e.pValue).toBeGreaterThan(0);
      expect(e.pValue).toBeLessThanOrEqual(1);
    }
  });
});

describe("a 3-model eval: pass, half, never over 1 task x 2 variants x 4 repeats", () => {
  // Per side n_eff = 2² / (1/4 + 1/4) = 8 trials. pass: rate 1, corrected lower limit
  // Wilson(1 − 1/16, 8) = (0.9375 + 0.2401 − 1.96·√(0.9375·0.0625/8 + 3.8416/256)) / 1.4802 = 0.597696;
  // never: [0, 0.402304] by symmetry; half: 4 failures < 5, corrected: Wilson(0.4375, 8) lower
  // 0.174496, Wilson(0.5625, 8) upper 0.825504.
  const { plan, results } = knownEval();
  const summary = summarize(plan, results, { stoppedByBudget: false });
  const pair = (a: string, b: string) => summary.comparisons.find((c) => c.a === a && c.b === b);

  it("the summary follows its contract (the page's strict schema reads every new field)", () => {
    expect(evalSummarySchema.safeParse(summary).success).toBe(true);
    expect(
      evalSummarySchema.safeParse({ ...summary, comparisons: [{ ...pair("pass", "never"), extra: 1 }] })
        .success,
    ).toBe(false);
  });

  it("differences, intervals and raw p-values", () => {
    const pn = pair("pass", "never");
    expect(pn).toMatchObject({ cells: 2, meanDifference: 1 });
    // MOVER: 1 − √((1 − 0.597696)² + 0.402304²) = 0.431056; upper 1 + 0.
    expect(pn?.ci95[0]).toBeCloseTo(0.431056, 5);
    expect(pn?.ci95[1]).toBe(1);
    // (1/70)² per tail, twice.
    expect(pn?.pValue).toBeCloseTo(2 / 4900, 12);
    const ph = pair("pass", "half");
    expect(ph).toMatchObject({ cells: 2, meanDifference: 0.5 });
    // 0.5 − √(0.402304² + 0.325504²) = −0.017495; 0.5 + √(0 + 0.325504²) = 0.825504.
    expect(ph?.ci95[0]).toBeCloseTo(-0.017495, 5);
    expect(ph?.ci95[1]).toBeCloseTo(0.825504, 5);
    expect(ph?.pValue).toBeCloseTo(2 * (3 / 14) ** 2, 12); // 0.091837
    const hn = pair("half", "never");
    expect(hn?.pValue).toBeCloseTo(2 * (6 / 28) ** 2, 12); // 2/4 vs 0/4: C(4,2)/C(8,2) = 6/28
  });

  it("Holm over all 6 comparisons: 3 model pairs and, per model, nl against ex", () => {
    expect(summary.variantComparisons.map((c) => [c.model, c.a, c.b, c.cells, c.pValue])).toEqual([
      ["pass", "nl", "ex", 1, 1],
      ["half", "nl", "ex", 1, 1],
      ["never", "nl", "ex", 1, 1],
    ]);
    // sorted: 2/4900, 0.091837, 0.091837, 1, 1, 1 -> 6·2/4900 = 0.002449; 5·0.091837 = 0.459184
    // (and the next, 4·0.091837, is raised to it); the rest 1.
    expect(pair("pass", "never")?.pValueHolm).toBeCloseTo((6 * 2) / 4900, 12);
    expect(pair("pass", "half")?.pValueHolm).toBeCloseTo(5 * 2 * (3 / 14) ** 2, 12);
    expect(pair("half", "never")?.pValueHolm).toBeCloseTo(5 * 2 * (3 / 14) ** 2, 12);
    for (const v of summary.variantComparisons) expect(v.pValueHolm).toBe(1);
  });

  it("the verdicts and their words: the sign of a − b as in the numbers", () => {
    expect(pair("pass", "never")?.better).toBe("pass");
    expect(pair("pass", "never")?.text).toBe(
      "pass passes more often than never: pass − never = +100.0 points of pass rate over 2 shared cell(s) (95 % interval +43.1 to +100.0; p < 0.001, Holm-adjusted p = 0.002 over 6 comparison(s))",
    );
    expect(pair("pass", "half")?.better).toBe("not distinguishable");
    expect(pair("pass", "half")?.text).toBe(
      "pass and half are not distinguishable with 4 repeats: pass − half = +50.0 points of pass rate over 2 shared cell(s) (95 % interval −1.7 to +82.6; p = 0.092, Holm-adjusted p = 0.459 over 6 comparison(s))",
    );
    expect(summary.variantComparisons[1]?.text).toMatch(
      /^with half, variant nl and ex are not distinguishable with 4 repeats: nl − ex = 0\.0 points of pass rate over 1 task\(s\)/,
    );
  });

  it("b better than a reads as b, with a − b negative", () => {
    const p = planOf(4);
    // never (third) beats pass (first) in every cell.
    const rs = p.trials.map((t) => result(p, t.trialId, t.model === "never" ? "pass" : "fail"));
    const c = summarize(p, rs, { stoppedByBudget: false }).comparisons.find(
      (x) => x.a === "pass" && x.b === "never",
    );
    expect(c?.better).toBe("never");
    expect(c?.meanDifference).toBe(-1);
    expect(c?.ci95[1]).toBeLessThan(0);
    expect(c?.text).toMatch(/^never passes more often than pass: pass − never = −100\.0 points/);
  });

  it("an interval that excludes 0 is not enough: the Holm-adjusted test must reject too", () => {
    // 1 repeat: 1/1 vs 0/1 in both cells; the interval may exclude 0, but p = 2·(1/2)² = 0.5.
    const one = planOf(1);
    const rs = one.trials.map((t) => result(one, t.trialId, t.model === "never" ? "fail" : "pass"));
    const c = summarize(one, rs, { stoppedByBudget: false }).comparisons.find(
      (x) => x.a === "pass" && x.b === "never",
    );
    expect(c?.pValue).toBeCloseTo(0.5, 12);
    expect(c?.better).toBe("not distinguishable");
  });
});
