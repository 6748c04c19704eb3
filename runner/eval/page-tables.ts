// The eval page's tables of comparisons and of variants (the SciFi paper's Table 1 layout), split
// from page.ts. Every string comes from summary.json and is hostile: it goes through the escaping
// template; scripted models are labelled wherever their names appear, in sentences too.
import { type Html, html } from "../report/escape.ts";
import { percent, seconds, tokenShort, usd } from "../report/format.ts";
import { pText } from "./comparisons.ts";
import type {
  EvalSummary,
  PairedComparison,
  SampleStat,
  VariantComparison,
  VariantTableCell,
} from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";
import type { TrialSets } from "./trial-sets.ts";

export const interval = ([lo, hi]: [number, number]): string => `${percent(lo)} – ${percent(hi)}`;

/** Mean ± standard error, the median under it. */
export function stat(s: SampleStat, format: (v: number) => string): Html {
  return s.n === 0
    ? html`—`
    : html`${format(s.mean)} ± ${format(s.se)}<br><span class="median">median ${format(s.median)}</span>`;
}

/** Mean ± standard error (median) on one line. */
function inline(s: SampleStat, format: (v: number) => string): Html {
  return s.n === 0
    ? html`—`
    : html`${format(s.mean)} ± ${format(s.se)} <span class="median">(median ${format(s.median)})</span>`;
}

/** The comparisons of models, then of variants per model: each in words, then its numbers. */
export function comparisonsSection(
  summary: EvalSummary,
  label: (m: string) => Html,
  scripted: Set<string>,
  sets: TrialSets,
): Html {
  if (summary.comparisons.length === 0 && summary.variantComparisons.length === 0)
    return html`<p class="muted">No comparison: it needs two models (or two variants) with verdicts on the same tasks.</p>`;
  const plain = (v: string): Html => html`${v}`;
  const one = (
    c: PairedComparison,
    head: Html,
    name: (s: string) => Html,
    trials: TrialResult[],
    what: string,
  ) => {
    const v = (content: Html | string) => sets.link(content, { what, trials });
    return html`<div class="comparison${c.better === "not distinguishable" ? "" : " decided"}"><p><strong>${head}</strong>: ${labelIn(c.text, label, scripted)}</p><p class="muted">${v(`${c.cells} paired strata`)} · mean difference in pass rate (${name(c.a)} − ${name(c.b)}) ${v(signedPoints(c.meanDifference))}, 95 % interval ${v(`${signedPoints(c.ci95[0])} to ${signedPoints(c.ci95[1])}`)} · p ${v(pText(c.pValue))}, Holm-adjusted p ${v(pText(c.pValueHolm))} · ${c.better === "not distinguishable" ? "not distinguishable" : html`better: ${name(c.better)}`}</p></div>`;
  };
  const method = summary.comparisons[0]?.method ?? summary.variantComparisons[0]?.method ?? "";
  return html`<div id="comparisons">${summary.comparisons.map((c) => one(c, html`${label(c.a)} vs ${label(c.b)}`, label, modelPairTrials(sets, c), `${c.a} vs ${c.b} — both models' trials with a verdict over the cells both have verdicts on`))}</div>
${summary.variantComparisons.length ? html`<div id="variant-comparisons">${summary.variantComparisons.map((c) => one(c, html`${label(c.model)}: variant ${c.a} vs ${c.b}`, plain, variantPairTrials(sets, c), `${c.model} — variants ${c.a} vs ${c.b}, its trials with a verdict over the tasks both variants have verdicts on`))}</div>` : ""}
<p class="muted method">Method: ${method}. docs/eval.md, "Comparisons", gives the formulas and their coverage.</p>`;
}

/**
 * The trials behind a comparison of two models, as comparisons.ts pairs them: both models' trials
 * with a verdict over the (task, variant) cells where each has at least one.
 */
export function modelPairTrials(sets: TrialSets, c: PairedComparison): TrialResult[] {
  const judged = sets.of(() => true, "judged");
  const cell = (r: TrialResult) => `${r.task}\u0000${r.variant}`;
  const cellsOf = (m: string) => new Set(judged.filter((r) => r.model === m).map(cell));
  const [a, b] = [cellsOf(c.a), cellsOf(c.b)];
  return judged.filter((r) => (r.model === c.a || r.model === c.b) && a.has(cell(r)) && b.has(cell(r)));
}

/** The trials behind a comparison of two variants of one model: over the tasks both have verdicts on. */
export function variantPairTrials(sets: TrialSets, c: VariantComparison): TrialResult[] {
  const own = sets.of((r) => r.model === c.model, "judged");
  const tasksOf = (v: string) => new Set(own.filter((r) => r.variant === v).map((r) => r.task));
  const [a, b] = [tasksOf(c.a), tasksOf(c.b)];
  return own.filter((r) => (r.variant === c.a || r.variant === c.b) && a.has(r.task) && b.has(r.task));
}

/** Per model: tasks as rows (then all tasks), variants as columns; success, iterations, time, tokens, USD. */
export function variantTables(summary: EvalSummary, label: (m: string) => Html, sets: TrialSets): Html {
  const { variants, rows } = summary.variantTable;
  if (rows.length === 0) return html`<p class="muted">No trial has a verdict yet.</p>`;
  const models = [...new Set(rows.map((r) => r.model))];
  return html`<div id="variant-tables">${models.map(
    (model) =>
      html`<h3>${label(model)}</h3><table class="eval variant-table"><tr><th>Task</th>${variants.map((v) => html`<th>${v}</th>`)}</tr>
${rows
  .filter((r) => r.model === model)
  .map(
    (r) =>
      html`<tr class="${r.task === null ? "all-tasks" : "task-row"}"><td>${r.task ?? html`<strong>all tasks</strong>`}</td>${r.cells.map(
        (c, i) => {
          const variant = variants[i] as string;
          const trials = sets.of(
            (t) => t.model === model && t.variant === variant && (r.task === null || t.task === r.task),
            "all",
          );
          const what = `${model} on variant ${variant}, ${r.task === null ? "all tasks" : `task ${r.task}`}`;
          return html`<td class="num">${variantCell(c, sets, what, trials)}</td>`;
        },
      )}</tr>`,
  )}</table>`,
  )}</div>`;
}

function variantCell(c: VariantTableCell | null, sets: TrialSets, what: string, trials: TrialResult[]): Html {
  if (c === null) return html`<span class="no-trials" title="the task has no such variant">—</span>`;
  const s = { ...c, fails: c.n - c.passes };
  const errors = (text: string) => sets.stats(text, what, trials, s, "errors");
  if (c.n === 0)
    return html`<span class="muted">no verdict${c.errors ? html` (${errors(`${c.errors} errors`)})` : ""}</span>`;
  const v = (content: Html | string) => sets.stats(content, what, trials, s, "judged");
  return html`${v(html`<span class="rate">${percent(c.passRate)}</span> (${c.passes} / ${c.n})`)}${c.errors ? html` · ${errors(`${c.errors} errors`)}` : ""}<br>${v(html`<span class="median">${interval(c.wilson95)}</span><br>iterations ${inline(c.iterations, (x) => x.toFixed(2))}<br>time ${inline(c.wallMs, seconds)}<br>tokens ${tokenShort(c.tokens.mean)}`)} · ${sets.stats(html`${usd(c.usd)}${c.usdPerPass === null ? "" : ` (${usd(c.usdPerPass)} per pass)`}`, what, trials, s, "all")}`;
}

/** Hostile text with every scripted model named in it labelled (the rest escaped as usual). */
export function labelIn(text: string, label: (m: string) => Html, scripted: Set<string>): Html {
  const names = [...scripted].filter((m) => m !== "").sort((a, b) => b.length - a.length);
  const parts: (string | Html)[] = [];
  let rest = text;
  for (;;) {
    let at = -1;
    let name = "";
    for (const m of names) {
      const i = wholeName(rest, m);
      if (i !== -1 && (at === -1 || i < at)) [at, name] = [i, m];
    }
    if (at === -1) break;
    parts.push(rest.slice(0, at), label(name));
    rest = rest.slice(at + name.length);
  }
  parts.push(rest);
  return html`${parts}`;
}

/** Where `name` first stands alone in `text` (not inside a longer word or spec), or -1. */
function wholeName(text: string, name: string): number {
  const part = /[A-Za-z0-9._:/-]/;
  for (let i = text.indexOf(name); i !== -1; i = text.indexOf(name, i + 1)) {
    const before = text[i - 1];
    const after = text[i + name.length];
    // A sentence's full stop after the name still ends it.
    const afterOk =
      after === undefined ||
      !part.test(after) ||
      (after === "." && !part.test(text[i + name.length + 1] ?? " "));
    if ((before === undefined || !part.test(before)) && afterOk) return i;
  }
  return -1;
}

/** A difference of two rates in percentage points, signed. */
function signedPoints(d: number): string {
  const points = (d * 100).toFixed(1);
  return `${d > 0 ? "+" : ""}${points} points`;
}
