// The statistics of an eval (runner/eval/summary.ts, formulas in docs/eval.md), computed from the
// plan and the trials' result.json files alone: pure functions, so the summary of an eval that was
// killed and resumed equals that of one that ran straight through. Errors (infrastructure) are
// counted apart: they are neither in a pass rate's n nor in the sample statistics.
import type { EvalPlan } from "./plan.ts";
import type { EvalSummary, GroupSummary, PairedComparison, PassStats, SampleStat } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";

/** z for a two-sided 95 % interval. */
const Z95 = 1.96;

export interface SummarizeOptions {
  /** The eval stopped scheduling trials because its budget was spent. */
  stoppedByBudget: boolean;
  now?: Date;
}

export function summarize(
  plan: EvalPlan,
  results: readonly TrialResult[],
  options: SummarizeOptions,
): EvalSummary {
  // Only the plan's trials count, each once (its result.json is keyed by trial id).
  const planned = new Set(plan.trials.map((t) => t.trialId));
  const byId = new Map<string, TrialResult>();
  for (const r of results) if (planned.has(r.trialId)) byId.set(r.trialId, r);
  const all = [...byId.values()];
  const scripted = (label: string) => plan.models.find((m) => m.label === label)?.scripted ?? false;
  const variants = [...new Set(plan.tasks.flatMap((t) => t.variants.map((v) => v.name)))];
  const groups: GroupSummary[] = [];
  for (const task of plan.tasks)
    for (const variant of task.variants)
      for (const model of plan.models) {
        const cell = all.filter(
          (r) => r.task === task.name && r.variant === variant.name && r.model === model.label,
        );
        groups.push(groupSummary(task.name, variant.name, model.label, model.scripted, cell));
      }
  const spentUsd = all.reduce((s, r) => s + r.usd, 0);
  const models = plan.models.map((m) => m.label);
  const comparisons: PairedComparison[] = [];
  for (let i = 0; i < models.length; i++)
    for (let j = i + 1; j < models.length; j++)
      comparisons.push(compare(models[i] as string, models[j] as string, groups, plan.repeats));
  return {
    version: 1,
    evalId: plan.evalId,
    computedAt: (options.now ?? new Date()).toISOString(),
    suite: plan.suite,
    models,
    variants,
    tasks: plan.tasks.map((t) => t.name),
    repeats: plan.repeats,
    trials: {
      planned: plan.trials.length,
      pass: all.filter((r) => r.status === "pass").length,
      fail: all.filter((r) => r.status === "fail").length,
      error: all.filter((r) => r.status === "error").length,
      pending: plan.trials.length - all.length,
    },
    budget: { usd: plan.budgetUsd, spentUsd, stoppedByBudget: options.stoppedByBudget },
    groups,
    byModel: models.map((model) => ({
      model,
      scripted: scripted(model),
      ...passStats(all.filter((r) => r.model === model)),
    })),
    byVariant: variants.map((variant) => ({
      variant,
      ...passStats(all.filter((r) => r.variant === variant)),
    })),
    comparisons,
  };
}

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

function groupSummary(
  task: string,
  variant: string,
  model: string,
  scripted: boolean,
  cell: readonly TrialResult[],
): GroupSummary {
  const stats = passStats(cell);
  const judged = cell.filter((r) => r.status !== "error");
  const passAtK: Record<string, number> = {};
  const passHatK: Record<string, number> = {};
  for (let k = 1; k <= stats.n; k++) {
    passAtK[String(k)] = passAtKOf(stats.n, stats.passes, k);
    passHatK[String(k)] = passHatKOf(stats.n, stats.passes, k);
  }
  return {
    task,
    variant,
    model,
    scripted,
    ...stats,
    passAtK,
    passHatK,
    iterations: sample(judged.map((r) => r.iterations)),
    wallMs: sample(judged.map((r) => r.wallMs)),
    tokens: sample(
      judged.map((r) => r.tokens.input + r.tokens.output + r.tokens.cacheRead + r.tokens.cacheWrite),
    ),
    usdPerTrial: sample(judged.map((r) => r.usd)),
    cacheReadShare: sample(judged.map((r) => r.cacheReadShare)),
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

/** Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k), as a product to stay exact. */
export function passAtKOf(n: number, c: number, k: number): number {
  if (n - c < k) return 1;
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

/** pass^k: C(c, k) / C(n, k), the chance that k trials drawn without replacement all pass. */
export function passHatKOf(n: number, c: number, k: number): number {
  if (c < k) return 0;
  let all = 1;
  for (let i = 0; i < k; i++) all *= (c - i) / (n - i);
  return all;
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

export const PAIRED_METHOD =
  "Agresti-Caffo per cell (one success and one failure added to each model's counts), cells averaged with equal weight: d = mean(p~a - p~b), SE = sqrt(sum(p~a(1-p~a)/(na+2) + p~b(1-p~b)/(nb+2))) / cells, 95 % interval d ± 1.96 SE clipped to [-1, 1]; the mean difference itself is of the raw pass rates";

/** Models a and b over the cells both have verdicts on (docs/eval.md: the paired comparison). */
export function compare(
  a: string,
  b: string,
  groups: readonly GroupSummary[],
  repeats: number,
): PairedComparison {
  const cells: [GroupSummary, GroupSummary][] = [];
  for (const ga of groups) {
    if (ga.model !== a || ga.n === 0) continue;
    const gb = groups.find((g) => g.model === b && g.task === ga.task && g.variant === ga.variant && g.n > 0);
    if (gb) cells.push([ga, gb]);
  }
  const method = PAIRED_METHOD;
  if (cells.length === 0) {
    return {
      a,
      b,
      cells: 0,
      meanDifference: 0,
      ci95: [-1, 1],
      better: "not distinguishable",
      text: `${a} and ${b} share no cell with verdicts: not distinguishable`,
      method,
    };
  }
  let raw = 0;
  let adjusted = 0;
  let variance = 0;
  for (const [ga, gb] of cells) {
    raw += ga.passRate - gb.passRate;
    const pa = (ga.passes + 1) / (ga.n + 2);
    const pb = (gb.passes + 1) / (gb.n + 2);
    adjusted += pa - pb;
    variance += (pa * (1 - pa)) / (ga.n + 2) + (pb * (1 - pb)) / (gb.n + 2);
  }
  const count = cells.length;
  const meanDifference = raw / count;
  const se = Math.sqrt(variance) / count;
  const centre = adjusted / count;
  const ci95: [number, number] = [Math.max(-1, centre - Z95 * se), Math.min(1, centre + Z95 * se)];
  const better = ci95[0] > 0 ? a : ci95[1] < 0 ? b : "not distinguishable";
  const points = (x: number) => `${(x * 100).toFixed(1)}`;
  const interval = `95 % interval ${points(ci95[0])} to ${points(ci95[1])} points`;
  const over = `over ${count} shared cell(s)`;
  const minRepeats = Math.min(...cells.flatMap(([ga, gb]) => [ga.n, gb.n]));
  // The interval is centred on the adjusted difference, which few repeats shrink towards 0 (at 2
  // repeats, 2/2 against 0/2 is 0.75 - 0.25): both are said, so a raw difference outside its own
  // interval reads as what it is, not as an error.
  const adjustedNote =
    Math.abs(centre - meanDifference) > 1e-9
      ? `; the interval is centred on the adjusted difference ${points(centre)}, which few repeats shrink towards 0`
      : "";
  const text =
    better === "not distinguishable"
      ? `${a} and ${b} are not distinguishable with ${Math.min(minRepeats, repeats)} repeats ${over} (pass-rate difference ${points(meanDifference)} points, ${interval}${adjustedNote})`
      : `${better} is better than ${better === a ? b : a} by ${points(Math.abs(meanDifference))} points of pass rate ${over} (${interval} for ${a} - ${b}${adjustedNote})`;
  return { a, b, cells: count, meanDifference, ci95, better, text, method };
}

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}

/** summary.csv: one row per cell (task, variant, model), fixed columns, pass@k for k = 1..repeats. */
export function summaryCsv(summary: EvalSummary): string {
  const ks = Array.from({ length: summary.repeats }, (_, i) => String(i + 1));
  const stat = (name: string) => [`${name}_mean`, `${name}_se`, `${name}_median`];
  const header = [
    "task",
    "variant",
    "model",
    "scripted",
    "n",
    "passes",
    "fails",
    "errors",
    "pass_rate",
    "wilson95_low",
    "wilson95_high",
    "usd",
    "usd_per_pass",
    ...ks.map((k) => `pass_at_${k}`),
    ...ks.map((k) => `pass_hat_${k}`),
    ...stat("iterations"),
    ...stat("wall_ms"),
    ...stat("tokens"),
    ...stat("usd_per_trial"),
    ...stat("cache_read_share"),
    "integrity_n",
    "integrity_events",
    "integrity_per_trial",
    "integrity_per_trial_low",
    "integrity_per_trial_high",
    "integrity_share",
    "integrity_wilson95_low",
    "integrity_wilson95_high",
  ];
  const num = (x: number | null | undefined) => (x === null || x === undefined ? "" : String(x));
  const s = (x: SampleStat) => [num(x.mean), num(x.se), num(x.median)];
  const rows = summary.groups.map((g) => [
    g.task,
    g.variant,
    g.model,
    String(g.scripted),
    num(g.n),
    num(g.passes),
    num(g.fails),
    num(g.errors),
    num(g.passRate),
    num(g.wilson95[0]),
    num(g.wilson95[1]),
    num(g.usd),
    num(g.usdPerPass),
    ...ks.map((k) => num(g.passAtK[k])),
    ...ks.map((k) => num(g.passHatK[k])),
    ...s(g.iterations),
    ...s(g.wallMs),
    ...s(g.tokens),
    ...s(g.usdPerTrial),
    ...s(g.cacheReadShare),
    num(g.integrity?.n),
    num(g.integrity?.events),
    num(g.integrity?.eventsPerTrial.mean),
    num(g.integrity?.eventsPerTrial.ci95[0]),
    num(g.integrity?.eventsPerTrial.ci95[1]),
    num(g.integrity?.share),
    num(g.integrity?.wilson95[0]),
    num(g.integrity?.wilson95[1]),
  ]);
  return `${[header, ...rows].map((r) => r.map(csvField).join(",")).join("\n")}\n`;
}

function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}
