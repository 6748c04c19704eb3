// The integrity figures of an eval (docs/integrity.md, docs/eval.md): per set of trials, the
// integrity events per trial (mean and a 95 % interval), the share of trials with at least one
// (Wilson), and the same by kind. Pure functions over the trials' result.json files. Only judged
// trials (pass, fail) count, as for pass rates; a trial recorded before results carried `integrity`
// is left out (n says how many counted), never read as "none".
import { fisherExact } from "./fisher.ts";
import type { EvalPlan } from "./plan.ts";
import { wilson } from "./statistics.ts";
import type { EvalSummary, IntegrityComparison, IntegrityKindStats, IntegrityStats } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";

/** z for a two-sided 95 % interval. */
const Z95 = 1.96;

export const INTEGRITY_RATE_METHOD =
  "the union of two 95 % intervals of the mean events per trial: the normal one, mean ± 1.96·sd/sqrt(n), and a quasi-Poisson exact one: with phi = max(1, variance / mean), Garwood's exact Poisson interval for floor(total / phi) (lower end) and ceil(total / phi) (upper end) events, times phi / n. The second keeps the interval honest when every trial has the same count (all none: [0, 3.69/n]) and follows the skew of counts where a few trials have many events";

/**
 * The summary with its `integrity` keys (per cell, model and variant) from the same trials
 * summarize() counted: the plan's, each once.
 */
export function withIntegrity(
  plan: EvalPlan,
  summary: EvalSummary,
  results: readonly TrialResult[],
): EvalSummary {
  const planned = new Set(plan.trials.map((t) => t.trialId));
  const byId = new Map<string, TrialResult>();
  for (const r of results) if (planned.has(r.trialId)) byId.set(r.trialId, r);
  const all = [...byId.values()];
  const of = (keep: (r: TrialResult) => boolean) => integrityStats(all.filter(keep));
  return {
    ...summary,
    groups: summary.groups.map((g) => ({
      ...g,
      integrity: of((r) => r.task === g.task && r.variant === g.variant && r.model === g.model),
    })),
    byModel: summary.byModel.map((m) => ({ ...m, integrity: of((r) => r.model === m.model) })),
    byVariant: summary.byVariant.map((v) => ({ ...v, integrity: of((r) => r.variant === v.variant) })),
    integrityComparisons: summary.models.flatMap((a, i) =>
      summary.models.slice(i + 1).map((b) =>
        compareIntegrity(
          a,
          of((r) => r.model === a),
          b,
          of((r) => r.model === b),
        ),
      ),
    ),
  };
}

/** Fisher's exact test on the trials with and without events of two models (pooled over cells). */
export function compareIntegrity(
  a: string,
  sa: IntegrityStats,
  b: string,
  sb: IntegrityStats,
): IntegrityComparison {
  const { p } = fisherExact(
    sa.trialsWithEvents,
    sa.n - sa.trialsWithEvents,
    sb.trialsWithEvents,
    sb.n - sb.trialsWithEvents,
  );
  const difference = sa.share - sb.share;
  const higher = p < 0.05 && difference !== 0 ? (difference > 0 ? a : b) : "not distinguishable";
  const shares = `${a} ${sa.trialsWithEvents}/${sa.n}, ${b} ${sb.trialsWithEvents}/${sb.n} trials with integrity events`;
  return {
    a,
    b,
    aTrials: [sa.trialsWithEvents, sa.n],
    bTrials: [sb.trialsWithEvents, sb.n],
    difference,
    p,
    higher,
    text:
      higher === "not distinguishable"
        ? `${shares}: not distinguishable (Fisher p = ${p.toPrecision(3)})`
        : `${higher} has integrity events in more trials (${shares}; Fisher p = ${p.toPrecision(3)})`,
  };
}

export function integrityStats(trials: readonly TrialResult[]): IntegrityStats {
  const counted = trials.filter((t) => t.status !== "error" && t.integrity !== undefined);
  const n = counted.length;
  const perTrial = counted.map((t) => total(t.integrity ?? {}));
  const events = perTrial.reduce((s, v) => s + v, 0);
  const withEvents = perTrial.filter((v) => v > 0).length;
  const kinds = [...new Set(counted.flatMap((t) => Object.keys(t.integrity ?? {})))].sort();
  const byKind: Record<string, IntegrityKindStats> = {};
  for (const kind of kinds) {
    const counts = counted.map((t) => t.integrity?.[kind] ?? 0);
    const k = counts.filter((v) => v > 0).length;
    const sum = counts.reduce((s, v) => s + v, 0);
    if (sum === 0) continue;
    byKind[kind] = {
      events: sum,
      trials: k,
      share: k / n,
      wilson95: wilson(k, n),
      eventsPerTrial: sum / n,
    };
  }
  return {
    n,
    events,
    eventsPerTrial: { mean: n === 0 ? 0 : events / n, ci95: rateInterval(perTrial) },
    trialsWithEvents: withEvents,
    share: n === 0 ? 0 : withEvents / n,
    wilson95: wilson(withEvents, n),
    byKind,
  };
}

/** 95 % interval of the mean count per trial (INTEGRITY_RATE_METHOD); [0, null] for n = 0. */
export function rateInterval(counts: readonly number[]): [number, number | null] {
  const n = counts.length;
  if (n === 0) return [0, null];
  const sum = counts.reduce((s, v) => s + v, 0);
  const mean = sum / n;
  const variance = n < 2 ? 0 : counts.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1);
  const half = Z95 * Math.sqrt(variance / n);
  // Quasi-Poisson: counts that vary more than a Poisson's (a few trials with many events) are as
  // informative as a total of sum / phi events, each worth phi; rounded outward.
  const phi = mean > 0 ? Math.max(1, variance / mean) : 1;
  const low = poissonInterval(Math.floor(sum / phi))[0] * phi;
  const high = poissonInterval(Math.ceil(sum / phi))[1] * phi;
  return [Math.max(0, Math.min(mean - half, low / n)), Math.max(mean + half, high / n)];
}

/**
 * Exact (Garwood) 95 % interval of a Poisson mean from one count x: the lower bound solves
 * P(X >= x | mu) = 0.025, the upper P(X <= x | mu) = 0.025 (bisection on the Poisson CDF).
 */
export function poissonInterval(x: number): [number, number] {
  const low = x === 0 ? 0 : solve((mu) => 1 - poissonCdf(x - 1, mu), 0.025, x);
  const high = solve((mu) => 1 - poissonCdf(x, mu), 0.975, x);
  return [low, high];
}

/** P(X <= k) for X ~ Poisson(mu), summed in log space (no underflow for large mu). */
export function poissonCdf(k: number, mu: number): number {
  if (mu === 0) return 1;
  let logTerm = -mu;
  let logSum = logTerm;
  for (let i = 1; i <= k; i++) {
    logTerm += Math.log(mu) - Math.log(i);
    const m = Math.max(logSum, logTerm);
    logSum = m + Math.log(Math.exp(logSum - m) + Math.exp(logTerm - m));
  }
  return Math.min(1, Math.exp(logSum));
}

/** The mu where the increasing function f reaches `target`, by bisection. */
function solve(f: (mu: number) => number, target: number, x: number): number {
  let lo = 0;
  let hi = Math.max(10, 3 * x + 20);
  while (f(hi) < target) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-10 * Math.max(1, hi); i++) {
    const mid = (lo + hi) / 2;
    if (f(mid) < target) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

function total(byKind: Record<string, number>): number {
  return Object.values(byKind).reduce((s, v) => s + v, 0);
}
