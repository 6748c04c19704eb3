// Paired comparisons of an eval (docs/eval.md, "Comparisons"): two models on the (task, variant)
// cells both have verdicts on, or two variants of one model on the tasks both have verdicts on.
// Inference is stratified by cell, conditional on the suite's tasks (the tasks are the population
// asked about): the interval is Newcombe's hybrid score interval (MOVER) built from a stratified
// Wilson interval per side, the p-value an exact conditional test over the strata (the exact form
// of Cochran-Mantel-Haenszel), and Holm's step-down adjustment runs over every comparison of one
// eval. Pure functions, no I/O.
import type { GroupSummary, PairedComparison, VariantComparison } from "./summary.ts";

const Z95 = 1.96;
/** Fewer (effective) passes or failures than this on a side: the continuity-corrected interval. */
export const FEW = 5;

/** One stratum: a's passes of its n trials, b's of its n. */
export interface StratumCounts {
  passesA: number;
  nA: number;
  passesB: number;
  nB: number;
}

export interface PairedEstimate {
  /** Mean over strata of (pass rate a − pass rate b). */
  meanDifference: number;
  /** 95 % interval of that mean; always contains it. */
  ci95: [number, number];
  /** Two-sided exact conditional p-value of "a and b pass alike in every stratum". */
  pValue: number;
}

/** The estimate, interval and p-value of one paired comparison (strata with n > 0 on both sides). */
export function pairedEstimate(strata: readonly StratumCounts[]): PairedEstimate {
  const used = strata.filter((s) => s.nA > 0 && s.nB > 0);
  if (used.length === 0) return { meanDifference: 0, ci95: [-1, 1], pValue: 1 };
  const a = stratifiedWilson(
    used.map((s) => s.passesA),
    used.map((s) => s.nA),
  );
  const b = stratifiedWilson(
    used.map((s) => s.passesB),
    used.map((s) => s.nB),
  );
  return { meanDifference: a.rate - b.rate, ci95: mover(a, b), pValue: exactStratifiedP(used) };
}

export interface RateInterval {
  rate: number;
  low: number;
  high: number;
}

/**
 * The stratified Wilson interval of an equally weighted mean of K strata's pass rates (Yan and Su
 * 2010 with equal weights): the Wilson score interval of the mean rate with the effective sample
 * size K² / Σ 1/n_k, the one at which a single binomial has the mean's variance when every stratum
 * shares one rate (K strata of n trials: K·n).
 */
export function stratifiedWilson(passes: readonly number[], n: readonly number[]): RateInterval {
  const k = passes.length;
  let rate = 0;
  let inverse = 0;
  for (let i = 0; i < k; i++) {
    rate += (passes[i] as number) / (n[i] as number);
    inverse += 1 / (n[i] as number);
  }
  rate /= k;
  return rateInterval(rate, (k * k) / inverse);
}

/** A side's interval from its mean rate and effective n (the simulation test calls it directly). */
export function rateInterval(rate: number, nEff: number): RateInterval {
  // Continuity-corrected where a side has few passes or few failures (Newcombe's method 11): the
  // uncorrected interval dips below its level there (a simulation finds 0.92 at 4/5 against 1/5).
  const correction = nEff * Math.min(rate, 1 - rate) < FEW ? 1 : 0;
  const low = rate <= 0 ? 0 : wilsonOfRate(Math.max(0, rate - correction / (2 * nEff)), nEff)[0];
  const high = rate >= 1 ? 1 : wilsonOfRate(Math.min(1, rate + correction / (2 * nEff)), nEff)[1];
  return { rate, low, high };
}

/** Wilson score interval of a rate p observed over an effective n (not necessarily whole). */
export function wilsonOfRate(p: number, n: number, z = Z95): [number, number] {
  const z2 = z * z;
  const centre = p + z2 / (2 * n);
  const half = z * Math.sqrt(Math.max(0, (p * (1 - p)) / n + z2 / (4 * n * n)));
  const d = 1 + z2 / n;
  return [Math.max(0, (centre - half) / d), Math.min(1, (centre + half) / d)];
}

/**
 * MOVER (Zou and Donner 2008), Newcombe's (1998) method 10 for a difference of two independent
 * rates: each side's distance to its own interval's limits, combined in quadrature. The limits lie
 * on either side of the point estimate by construction.
 */
export function mover(a: RateInterval, b: RateInterval): [number, number] {
  const d = a.rate - b.rate;
  const low = d - Math.sqrt((a.rate - a.low) ** 2 + (b.high - b.rate) ** 2);
  const high = d + Math.sqrt((a.high - a.rate) ** 2 + (b.rate - b.low) ** 2);
  return [Math.max(-1, low), Math.min(1, high)];
}

/**
 * Two-sided exact conditional p-value over strata (the exact Cochran-Mantel-Haenszel test): given
 * each stratum's total passes, a's passes are hypergeometric when a and b pass alike; the statistic
 * Σ a's passes has the convolution of those as its null distribution, computed exactly. Two-sided
 * as twice the smaller tail, capped at 1.
 */
export function exactStratifiedP(strata: readonly StratumCounts[]): number {
  let dist = new Float64Array([1]);
  let offset = 0;
  let observed = 0;
  for (const s of strata) {
    const total = s.passesA + s.passesB;
    const lo = Math.max(0, total - s.nB);
    const hi = Math.min(total, s.nA);
    observed += s.passesA;
    if (lo === hi) {
      offset += lo;
      continue;
    }
    const h = hypergeometric(s.nA, s.nB, total, lo, hi);
    const next = new Float64Array(dist.length + hi - lo);
    for (let i = 0; i < dist.length; i++) {
      const p = dist[i] as number;
      if (p === 0) continue;
      for (let j = 0; j < h.length; j++) next[i + j] = (next[i + j] as number) + p * (h[j] as number);
    }
    dist = next;
    offset += lo;
  }
  const at = observed - offset;
  let lower = 0;
  let upper = 0;
  for (let i = 0; i < dist.length; i++) {
    if (i <= at) lower += dist[i] as number;
    if (i >= at) upper += dist[i] as number;
  }
  return Math.min(1, 2 * Math.min(lower, upper));
}

/** P(X = lo..hi) for X a's passes among `total` passes spread over nA + nB trials at random. */
function hypergeometric(nA: number, nB: number, total: number, lo: number, hi: number): Float64Array {
  const out = new Float64Array(hi - lo + 1);
  const logC = (n: number, k: number) => logFactorial(n) - logFactorial(k) - logFactorial(n - k);
  const denominator = logC(nA + nB, total);
  let sum = 0;
  for (let x = lo; x <= hi; x++) {
    const p = Math.exp(logC(nA, x) + logC(nB, total - x) - denominator);
    out[x - lo] = p;
    sum += p;
  }
  for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) / sum;
  return out;
}

const logFactorials: number[] = [0];
function logFactorial(n: number): number {
  for (let i = logFactorials.length; i <= n; i++)
    logFactorials.push((logFactorials[i - 1] as number) + Math.log(i));
  return logFactorials[n] as number;
}

/**
 * Holm's step-down adjustment (Holm 1979): the i-th smallest of m p-values is multiplied by
 * (m − i + 1), then made non-decreasing in that order and capped at 1. Returned in input order.
 */
export function holm(pValues: readonly number[]): number[] {
  const m = pValues.length;
  const order = pValues.map((p, i) => [p, i] as const).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const out = new Array<number>(m).fill(1);
  let running = 0;
  order.forEach(([p, i], rank) => {
    running = Math.max(running, Math.min(1, (m - rank) * p));
    out[i] = running;
  });
  return out;
}

export const PAIRED_METHOD =
  "stratified by cell, conditional on the suite's tasks: difference of the equally weighted mean pass rates over the shared cells; 95 % interval: Newcombe's hybrid score (MOVER) from each side's stratified Wilson interval (effective n = K² / Σ 1/n_k; continuity-corrected for a side with fewer than 5 effective passes or failures); p: exact conditional (Cochran-Mantel-Haenszel) test, two-sided as twice the smaller tail; Holm-adjusted over every comparison of the eval";

/** The comparisons of one eval before Holm's adjustment (its pValueHolm is the raw p). */
type Unadjusted = Omit<PairedComparison, "better" | "text" | "pValueHolm"> & { model?: string };

/**
 * Every pair of models over their shared (task, variant) cells, and, per model, every pair of
 * variants over the tasks both have verdicts on; Holm's adjustment over all of them together.
 */
export function allComparisons(
  models: readonly string[],
  variants: readonly string[],
  groups: readonly GroupSummary[],
): { comparisons: PairedComparison[]; variantComparisons: VariantComparison[] } {
  const pairs: Unadjusted[] = [];
  for (let i = 0; i < models.length; i++)
    for (let j = i + 1; j < models.length; j++) {
      const [a, b] = [models[i] as string, models[j] as string];
      pairs.push(
        unadjusted(
          a,
          b,
          shared(
            groups,
            (g) => g.model === a,
            (g) => g.model === b,
            cellKey,
          ),
        ),
      );
    }
  const byModel = pairs.length;
  for (const model of models)
    for (let i = 0; i < variants.length; i++)
      for (let j = i + 1; j < variants.length; j++) {
        const [a, b] = [variants[i] as string, variants[j] as string];
        const of = (v: string) => (g: GroupSummary) => g.model === model && g.variant === v;
        pairs.push({
          ...unadjusted(
            a,
            b,
            shared(groups, of(a), of(b), (g) => g.task),
          ),
          model,
        });
      }
  const adjusted = holm(pairs.map((p) => p.pValue));
  const done = pairs.map((p, i) => finish(p, adjusted[i] as number, pairs.length));
  return {
    comparisons: done.slice(0, byModel),
    variantComparisons: done.slice(byModel) as VariantComparison[],
  };
}

const cellKey = (g: GroupSummary) => `${g.task}\u0000${g.variant}`;

/** The strata both sides have verdicts on, in group order. */
function shared(
  groups: readonly GroupSummary[],
  isA: (g: GroupSummary) => boolean,
  isB: (g: GroupSummary) => boolean,
  key: (g: GroupSummary) => string,
): StratumCounts[] {
  const bs = new Map(groups.filter((g) => isB(g) && g.n > 0).map((g) => [key(g), g]));
  const out: StratumCounts[] = [];
  for (const ga of groups) {
    const gb = isA(ga) && ga.n > 0 ? bs.get(key(ga)) : undefined;
    if (gb) out.push({ passesA: ga.passes, nA: ga.n, passesB: gb.passes, nB: gb.n });
  }
  return out;
}

function unadjusted(a: string, b: string, strata: StratumCounts[]): Unadjusted & { minN: number } {
  const e = pairedEstimate(strata);
  const minN = Math.min(...strata.flatMap((s) => [s.nA, s.nB]));
  return { a, b, cells: strata.length, ...e, method: PAIRED_METHOD, minN };
}

/** `better` needs both: the Holm-adjusted test rejects and the interval excludes 0 on that side. */
function finish(
  p: Unadjusted & { minN?: number },
  pValueHolm: number,
  family: number,
): PairedComparison & { model?: string } {
  const { minN, model, ...rest } = p;
  const d = p.meanDifference;
  const excludes = p.ci95[0] > 0 || p.ci95[1] < 0;
  const better = pValueHolm < 0.05 && excludes && d !== 0 ? (d > 0 ? p.a : p.b) : "not distinguishable";
  const unit = model === undefined ? "shared cell(s)" : "task(s)";
  const who = model === undefined ? "" : `with ${model}, variant `;
  const numbers = `${p.a} − ${p.b} = ${signed(d)} points of pass rate over ${p.cells} ${unit} (95 % interval ${signed(p.ci95[0])} to ${signed(p.ci95[1])}; p ${pText(p.pValue)}, Holm-adjusted p ${pText(pValueHolm)} over ${family} comparison(s))`;
  let text: string;
  if (p.cells === 0) text = `${who}${p.a} and ${p.b} share no ${unit} with verdicts: not distinguishable`;
  else if (better !== "not distinguishable")
    text = `${who}${better} passes more often than ${better === p.a ? p.b : p.a}: ${numbers}`;
  else {
    const why =
      excludes && pValueHolm >= 0.05
        ? "; the interval excludes 0 but the Holm-adjusted test does not reject"
        : !excludes && pValueHolm < 0.05
          ? "; the Holm-adjusted test rejects but the interval reaches 0"
          : "";
    text = `${who}${p.a} and ${p.b} are not distinguishable with ${Number.isFinite(minN) ? minN : 0} repeats: ${numbers}${why}`;
  }
  return { ...rest, pValueHolm, better, text, ...(model === undefined ? {} : { model }) };
}

/** A difference of rates in percentage points, signed ("+12.5", "−3.0", "0.0"). */
function signed(x: number): string {
  const points = (Math.abs(x) * 100).toFixed(1);
  return points === "0.0" ? "0.0" : `${x > 0 ? "+" : "−"}${points}`;
}

/** "< 0.001" or "= 0.092": a p-value after "p". */
export function pText(p: number): string {
  return p < 0.001 ? "< 0.001" : `= ${p.toFixed(3)}`;
}
