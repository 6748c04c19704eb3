// The statistics of a set of trials that do not compare anything: pass counts with their Wilson
// interval, and mean ± SE with the median (formulas in docs/eval.md). Pure functions.
import type { PassStats, SampleStat } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";

/** z for a two-sided 95 % interval. */
const Z95 = 1.96;

export function passStats(trials: readonly TrialResult[]): PassStats {
  const passes = trials.filter((r) => r.status === "pass").length;
  const fails = trials.filter((r) => r.status === "fail").length;
  const errors = trials.filter((r) => r.status === "error").length;
  const n = passes + fails;
  // Money spent counts every trial, errors included: they were paid for.
  const usd = trials.reduce((s, r) => s + r.usd, 0);
  return {
    n,
    passes,
    fails,
    errors,
    passRate: n === 0 ? 0 : passes / n,
    wilson95: wilson(passes, n),
    usd,
    usdPerPass: passes === 0 ? null : usd / passes,
  };
}

/** Wilson score interval: (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n); [0, 1] for n = 0. */
export function wilson(passes: number, n: number, z = Z95): [number, number] {
  if (n === 0) return [0, 1];
  const p = passes / n;
  const z2 = z * z;
  const centre = p + z2 / (2 * n);
  const half = z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  const denominator = 1 + z2 / n;
  return [clamp01((centre - half) / denominator), clamp01((centre + half) / denominator)];
}

/** Mean, standard error (sample sd / sqrt(n), 0 for n < 2) and median; all 0 when n = 0. */
export function sample(values: readonly number[]): SampleStat {
  const n = values.length;
  if (n === 0) return { n: 0, mean: 0, se: 0, median: 0 };
  const mean = values.reduce((s, v) => s + v, 0) / n;
  const variance = n < 2 ? 0 : values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1);
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(n / 2);
  const median =
    n % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return { n, mean, se: Math.sqrt(variance / n), median };
}

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}
