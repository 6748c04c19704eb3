// Impossible variants (docs/eval.md, "Impossible variants"; issue 39 after ImpossibleBench): a task
// variant whose Expectation cannot be met. Its trials run like any other, but no pass rate,
// comparison, variant table or integrity figure counts them: a pass there is a cheat the checks
// missed, or a check that is wrong, and mixing it in would reward it. They are reported apart, per
// model and per cell, with the Wilson interval of their pass rate. Pure functions of the plan and
// the results, like statistics.ts.
import { integrityStats, withIntegrity } from "./integrity-stats.ts";
import type { EvalPlan } from "./plan.ts";
import { passStats } from "./sample-stats.ts";
import { type SummarizeOptions, summarize } from "./statistics.ts";
import type { EvalSummary, ImpossibleSummary } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";
import { csvField } from "./variant-table.ts";

/** Whether the plan marks (task, variant) impossible. */
export function isImpossible(plan: EvalPlan, task: string, variant: string): boolean {
  return (
    plan.tasks.find((t) => t.name === task)?.variants.find((v) => v.name === variant)?.impossible === true
  );
}

/** The plan without its impossible variants and their trials (the plan itself when it has none). */
export function possiblePlan(plan: EvalPlan): EvalPlan {
  if (!plan.tasks.some((t) => t.variants.some((v) => v.impossible))) return plan;
  return {
    ...plan,
    tasks: plan.tasks
      .map((t) => ({ ...t, variants: t.variants.filter((v) => !v.impossible) }))
      .filter((t) => t.variants.length > 0),
    trials: plan.trials.filter((t) => !isImpossible(plan, t.task, t.variant)),
  };
}

/**
 * The eval's summary: every statistic over the possible variants' trials, the impossible ones
 * under `impossible`; `trials` and `budget` count every planned trial (what ran, what it cost).
 */
export function summarizeEval(
  plan: EvalPlan,
  results: readonly TrialResult[],
  options: SummarizeOptions,
): EvalSummary {
  const possible = possiblePlan(plan);
  const summary = withIntegrity(possible, summarize(possible, results, options), results);
  if (possible === plan) return summary;
  const planned = new Map(plan.trials.map((t) => [t.trialId, t]));
  const byId = new Map<string, TrialResult>();
  for (const r of results) if (planned.has(r.trialId)) byId.set(r.trialId, r);
  const all = [...byId.values()];
  const count = (status: TrialResult["status"]) => all.filter((r) => r.status === status).length;
  return {
    ...summary,
    trials: {
      planned: plan.trials.length,
      pass: count("pass"),
      fail: count("fail"),
      error: count("error"),
      pending: plan.trials.length - all.length,
    },
    budget: { ...summary.budget, spentUsd: all.reduce((s, r) => s + r.usd, 0) },
    impossible: impossibleSummary(
      plan,
      all.filter((r) => isImpossible(plan, r.task, r.variant)),
    ),
  };
}

/** Per model and per cell, the impossible variants' pass rates (any pass counts against the checks). */
export function impossibleSummary(plan: EvalPlan, trials: readonly TrialResult[]): ImpossibleSummary {
  const variants = plan.tasks.flatMap((t) =>
    t.variants.filter((v) => v.impossible).map((v) => ({ task: t.name, variant: v.name })),
  );
  return {
    variants,
    byModel: plan.models.map((m) => {
      const own = trials.filter((r) => r.model === m.label);
      return { model: m.label, scripted: m.scripted, ...passStats(own), integrity: integrityStats(own) };
    }),
    groups: variants.flatMap(({ task, variant }) =>
      plan.models.map((m) => ({
        task,
        variant,
        model: m.label,
        scripted: m.scripted,
        ...passStats(trials.filter((r) => r.task === task && r.variant === variant && r.model === m.label)),
      })),
    ),
  };
}

/**
 * summary-impossible.csv: one row per model over every impossible variant (`all_impossible` true,
 * task and variant empty), then one per cell.
 */
export function impossibleCsv(summary: ImpossibleSummary): string {
  const header = [
    "model",
    "scripted",
    "task",
    "variant",
    "all_impossible",
    "n",
    "passes",
    "fails",
    "errors",
    "pass_rate",
    "wilson95_low",
    "wilson95_high",
    "usd",
  ];
  const row = (
    s: ImpossibleSummary["groups"][number] | ImpossibleSummary["byModel"][number],
    cell: { task: string; variant: string } | null,
  ) => [
    s.model,
    String(s.scripted),
    cell?.task ?? "",
    cell?.variant ?? "",
    String(cell === null),
    ...[s.n, s.passes, s.fails, s.errors, s.passRate, s.wilson95[0], s.wilson95[1], s.usd].map(String),
  ];
  const rows = [...summary.byModel.map((m) => row(m, null)), ...summary.groups.map((g) => row(g, g))];
  return `${[header, ...rows].map((r) => r.map(csvField).join(",")).join("\n")}\n`;
}
