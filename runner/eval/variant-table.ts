// The SciFi paper's Table 1 (description levels compared per task: success, iterations, time) for
// every model of an eval: per model x variant totals, the table with tasks as rows and variants as
// columns, and its CSV (summary-variants.csv). Pure functions of the results and the cells.
import type { EvalPlan } from "./plan.ts";
import { passStats, sample } from "./sample-stats.ts";
import type { GroupSummary, ModelVariantSummary, VariantTable, VariantTableCell } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";

const totalTokens = (r: TrialResult) =>
  r.tokens.input + r.tokens.output + r.tokens.cacheRead + r.tokens.cacheWrite;

/** Every model on every variant, over all tasks (errors paid for, not judged). */
export function modelVariantSummaries(
  models: EvalPlan["models"],
  variants: readonly string[],
  trials: readonly TrialResult[],
  groups: readonly GroupSummary[],
): ModelVariantSummary[] {
  const out: ModelVariantSummary[] = [];
  for (const model of models)
    for (const variant of variants) {
      const own = trials.filter((r) => r.model === model.label && r.variant === variant);
      const judged = own.filter((r) => r.status !== "error");
      out.push({
        model: model.label,
        variant,
        scripted: model.scripted,
        ...passStats(own),
        tasks: groups.filter((g) => g.model === model.label && g.variant === variant && g.n > 0).length,
        iterations: sample(judged.map((r) => r.iterations)),
        wallMs: sample(judged.map((r) => r.wallMs)),
        tokens: sample(judged.map(totalTokens)),
        usdPerTrial: sample(judged.map((r) => r.usd)),
      });
    }
  return out;
}

/** Per model: one row per task, then one for all tasks; one column per variant. */
export function variantTable(
  models: EvalPlan["models"],
  variants: readonly string[],
  groups: readonly GroupSummary[],
  totals: readonly ModelVariantSummary[],
): VariantTable {
  const rows: VariantTable["rows"] = [];
  const tasks = [...new Set(groups.map((g) => g.task))];
  for (const model of models) {
    const base = { model: model.label, scripted: model.scripted };
    for (const task of tasks) {
      const cells = variants.map((v) => {
        const g = groups.find((x) => x.model === model.label && x.task === task && x.variant === v);
        return g ? cellOf(g) : null;
      });
      if (cells.some((c) => c !== null)) rows.push({ ...base, task, cells });
    }
    rows.push({
      ...base,
      task: null,
      cells: variants.map((v) => {
        const t = totals.find((x) => x.model === model.label && x.variant === v);
        return t ? cellOf(t) : null;
      }),
    });
  }
  return { variants: [...variants], rows };
}

function cellOf(s: GroupSummary | ModelVariantSummary): VariantTableCell {
  return {
    n: s.n,
    passes: s.passes,
    errors: s.errors,
    passRate: s.passRate,
    wilson95: s.wilson95,
    iterations: s.iterations,
    wallMs: s.wallMs,
    tokens: s.tokens,
    usd: s.usd,
    usdPerPass: s.usdPerPass,
  };
}

/** The columns of one variant in summary-variants.csv (prefixed `<variant>_`). */
const CELL_COLUMNS = [
  "n",
  "passes",
  "errors",
  "pass_rate",
  "wilson95_low",
  "wilson95_high",
  "iterations_mean",
  "iterations_se",
  "iterations_median",
  "wall_ms_mean",
  "wall_ms_se",
  "wall_ms_median",
  "tokens_mean",
  "tokens_se",
  "tokens_median",
  "usd",
  "usd_per_pass",
] as const;

/**
 * summary-variants.csv: one row per model x task, then the model's row over all tasks (`all_tasks`
 * true, `task` empty: a column, not a marker a task folder could be named), variants as columns.
 */
export function variantTableCsv(table: VariantTable): string {
  const header = [
    "model",
    "scripted",
    "task",
    "all_tasks",
    ...table.variants.flatMap((v) => CELL_COLUMNS.map((c) => `${v}_${c}`)),
  ];
  const num = (x: number | null) => (x === null ? "" : String(x));
  const cell = (c: VariantTableCell | null): string[] =>
    c === null
      ? CELL_COLUMNS.map(() => "")
      : [
          num(c.n),
          num(c.passes),
          num(c.errors),
          num(c.passRate),
          num(c.wilson95[0]),
          num(c.wilson95[1]),
          ...[c.iterations, c.wallMs, c.tokens].flatMap((s) => [num(s.mean), num(s.se), num(s.median)]),
          num(c.usd),
          num(c.usdPerPass),
        ];
  const rows = table.rows.map((r) => [
    r.model,
    String(r.scripted),
    r.task ?? "",
    String(r.task === null),
    ...r.cells.flatMap(cell),
  ]);
  return `${[header, ...rows].map((r) => r.map(csvField).join(",")).join("\n")}\n`;
}

export function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}
