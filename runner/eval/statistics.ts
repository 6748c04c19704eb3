// The statistics of an eval (runner/eval/summary.ts, formulas in docs/eval.md), computed from the
// plan and the trials' result.json files alone: pure functions, so the summary of an eval that was
// killed and resumed equals that of one that ran straight through. Errors (infrastructure) are
// counted apart: they are neither in a pass rate's n nor in the sample statistics.
import { allComparisons } from "./comparisons.ts";
import type { EvalPlan } from "./plan.ts";
import { passStats, sample } from "./sample-stats.ts";
import type { EvalSummary, GroupSummary, SampleStat } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";

export { passStats, sample, wilson } from "./sample-stats.ts";

import { csvField, modelVariantSummaries, variantTable } from "./variant-table.ts";

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
  const { comparisons, variantComparisons } = allComparisons(models, variants, groups);
  const byModelVariant = modelVariantSummaries(plan.models, variants, all, groups);
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
    byModelVariant,
    variantTable: variantTable(plan.models, variants, groups, byModelVariant),
    comparisons,
    variantComparisons,
  };
}

export function groupSummary(
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
