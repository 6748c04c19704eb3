// `scifi eval report <id>`: the eval's self-contained HTML page, `evals/<id>/report.html`. It shows
// summary.json (the table per task x variant x model, the totals, the paired comparisons in words)
// and the trials' result.json files (plots, one row per trial linking to its run report), in the
// run report's frame: our CSS inline, no script, a policy that fetches nothing. Every string from
// those files is hostile and goes through the report's escaping; scripted models are labelled
// "scripted" wherever a model name appears.
import { lstatSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { stackedBars } from "../report/charts.ts";
import { type Html, html } from "../report/escape.ts";
import { percent, seconds, tokenShort, usd } from "../report/format.ts";
import { pageAssets, pageShell } from "../report/page.ts";
import { integrityTables } from "./integrity-page.ts";
import { type EvalPageInput, type LoadedTrial, loadEvalPageInput } from "./page-load.ts";
import { rateBars, SCRIPTED_SUFFIX, scatter, strip } from "./plots.ts";
import type { GroupSummary, PassStats, SampleStat } from "./summary.ts";

/** The page's file name in the eval folder. */
export const EVAL_REPORT_FILE = "report.html";

/** Reads `evalDir`'s summary.json and trials, writes `evalDir/report.html` whole, returns its path. */
export function writeEvalReport(evalDir: string): string {
  const input = loadEvalPageInput(evalDir);
  const out = join(evalDir, EVAL_REPORT_FILE);
  const text = renderEvalReport(input, evalDir);
  // Temp file then rename: a reader (or a second writer) never sees half a page.
  const temp = join(dirname(out), `.${basename(out)}.${process.pid}.tmp`);
  try {
    writeFileSync(temp, text);
    renameSync(temp, out);
  } catch (error) {
    try {
      unlinkSync(temp);
    } catch {
      // never created
    }
    throw new Error(`cannot write ${out}: ${(error as Error).message}`);
  }
  return out;
}

/** The CSS the eval page adds to the run report's. */
const EVAL_CSS = `
.scripted{display:inline-block;margin-left:4px;padding:0 6px;border-radius:8px;background:#6b46c1;color:#fff;font-size:11px;font-weight:600}
.wide{overflow-x:auto}
table.eval{font-size:12px}
table.eval td.num{text-align:right;white-space:nowrap}
table.eval .median{color:var(--muted)}
table.eval td.k{color:#444;white-space:nowrap}
.status.pass{background:var(--ok)}.status.fail{background:var(--bad)}.status.error{background:var(--warn)}
.comparison{margin:6px 0;padding:6px 10px;border-left:3px solid #c9d6e8}
.missing{color:var(--warn)}
`;

/** The page as a string (exported for tests that check the markup without a file). */
export function renderEvalReport(input: EvalPageInput, evalDir: string): string {
  const { summary, trials, problems } = input;
  const scripted = scriptedModels(input);
  const label = (model: string): Html =>
    html`<span class="model">${model}</span>${scripted.has(model) ? html`<span class="scripted">scripted</span>` : ""}`;
  const plain = (model: string): string => (scripted.has(model) ? `${model}${SCRIPTED_SUFFIX}` : model);
  const t = summary.trials;
  const body = html`<h1>Eval ${summary.evalId}</h1>
<p class="muted">suite ${summary.suite} · summary computed ${summary.computedAt} · ${summary.repeats} repeats</p>
<p id="eval-trials">${t.planned} trials planned: ${t.pass} passed, ${t.fail} failed, ${t.error} infrastructure errors (counted apart), ${t.pending} not run yet</p>
<p id="eval-budget">Spent ${usd(summary.budget.spentUsd)}${summary.budget.usd === null ? " (no budget set)" : ` of a ${usd(summary.budget.usd)} budget`}${summary.budget.stoppedByBudget ? html` · <strong class="missing">the budget ran out: the eval stopped scheduling trials</strong>` : ""}</p>
<p>Models: ${summary.models.map((m, i) => html`${i ? ", " : ""}${label(m)}`)}</p>
${scripted.size ? html`<p class="note" id="scripted-note">Models labelled <span class="scripted">scripted</span> answer from a script (scifi's scripted model): their numbers measure the runner and the checks, not a language model.</p>` : ""}
<h2>Plots</h2>
<div class="charts">
${rateBars(
  "Pass rate per model (95 % Wilson interval)",
  summary.byModel.map((m) => bar(plain(m.model), m)),
  "plot-rate-model",
)}
${rateBars(
  "Pass rate per variant (description level)",
  summary.byVariant.map((v) => bar(v.variant, v)),
  "plot-rate-variant",
)}
${scatter(
  "Cost against pass rate (one point per task x variant x model)",
  summary.groups.map((g) => ({
    x: g.usdPerTrial.mean,
    y: g.passRate,
    label: `${g.task} / ${g.variant} / ${plain(g.model)}`,
    series: plain(g.model),
  })),
  { id: "plot-cost-rate", xTitle: "USD per trial", yTitle: "pass rate", xFormat: usd },
)}
${strip(
  "Iterations per trial, per model",
  [...new Set([...summary.models, ...trials.map((t) => t.result.model)])].map(plain),
  trials.map(({ result: r }) => ({
    category: plain(r.model),
    value: r.iterations,
    status: r.status,
    label: `${r.trialId}`,
  })),
  "plot-iterations",
)}
${stackedBars({
  title: "Tokens per model, by kind",
  categories: summary.models.map(plain),
  series: tokenSeries(summary.models, trials),
  format: tokenShort,
  emptyNote: "no tokens counted (scripted trials may use none)",
})}
</div>
<h2>Per task, variant and model</h2>
${groupTable(summary.groups, label)}
<h2>Totals</h2>
<h3>Per model</h3>
${totalsTable(
  "totals-model",
  "Model",
  summary.byModel.map((m) => ({ name: label(m.model), stats: m })),
)}
<h3>Per variant (description level)</h3>
${totalsTable(
  "totals-variant",
  "Variant",
  summary.byVariant.map((v) => ({ name: html`${v.variant}`, stats: v })),
)}
${integrityTables(summary, label)}
<h2>Paired comparisons</h2>
${comparisons(summary, label, scripted)}
<h2>Trials</h2>
${trialTable(trials, evalDir, label)}
${problems.length ? html`<h2>Trials without a result</h2><ul id="trial-problems">${problems.map((p) => html`<li><code>${p.folder}</code>: ${p.error}</li>`)}</ul>` : ""}`;
  return pageShell(`scifi eval ${summary.evalId}`, body, { css: pageAssets().css + EVAL_CSS });
}

/** Every model any file marks scripted (the summary's cells and totals and each trial). */
function scriptedModels({ summary, trials }: EvalPageInput): Set<string> {
  const set = new Set<string>();
  for (const g of summary.groups) if (g.scripted) set.add(g.model);
  for (const m of summary.byModel) if (m.scripted) set.add(m.model);
  for (const { result } of trials) if (result.scripted) set.add(result.model);
  return set;
}

function bar(label: string, s: PassStats) {
  return { label, rate: s.passRate, low: s.wilson95[0], high: s.wilson95[1], n: s.n };
}

function tokenSeries(models: string[], trials: LoadedTrial[]) {
  const kinds = [
    ["input", "#2b6cb0"],
    ["output", "#c05621"],
    ["cacheRead", "#2f855a"],
    ["cacheWrite", "#6b46c1"],
  ] as const;
  return kinds.map(([kind, color]) => ({
    name: kind === "cacheRead" ? "cache read" : kind === "cacheWrite" ? "cache write" : kind,
    color,
    values: models.map((m) =>
      trials.filter((t) => t.result.model === m).reduce((sum, t) => sum + t.result.tokens[kind], 0),
    ),
  }));
}

const interval = ([lo, hi]: [number, number]): string => `${percent(lo)} – ${percent(hi)}`;

/** Mean ± standard error, the median under it. */
function stat(s: SampleStat, format: (v: number) => string): Html {
  return s.n === 0
    ? html`—`
    : html`${format(s.mean)} ± ${format(s.se)}<br><span class="median">median ${format(s.median)}</span>`;
}

/** pass@k or pass^k for every k, one k a line. */
function kRow(table: Record<string, number>): Html {
  const keys = Object.keys(table).sort((a, b) => Number(a) - Number(b));
  return keys.length === 0
    ? html`—`
    : html`${keys.map((k, i) => html`${i ? html`<br>` : ""}${k}: ${percent(table[k] ?? 0)}`)}`;
}

function groupTable(groups: GroupSummary[], label: (m: string) => Html): Html {
  if (groups.length === 0) return html`<p class="muted">No trial has a verdict yet.</p>`;
  return html`<div class="wide"><table class="eval" id="groups"><tr><th>Task</th><th>Variant</th><th>Model</th><th>Pass rate</th><th>95 % interval</th><th>Passed / n</th><th>Errors</th><th>pass@k</th><th>pass^k</th><th>Iterations</th><th>Wall time</th><th>Tokens</th><th>USD</th><th>Cost per pass</th></tr>
${groups.map(
  (g) =>
    html`<tr class="group"><td>${g.task}</td><td>${g.variant}</td><td>${label(g.model)}</td><td class="num rate">${percent(g.passRate)}</td><td class="num">${interval(g.wilson95)}</td><td class="num">${g.passes} / ${g.n}</td><td class="num">${g.errors}</td><td class="k">${kRow(g.passAtK)}</td><td class="k">${kRow(g.passHatK)}</td><td class="num">${stat(g.iterations, (v) => v.toFixed(2))}</td><td class="num">${stat(g.wallMs, seconds)}</td><td class="num">${stat(g.tokens, tokenShort)}</td><td class="num">${usd(g.usd)}</td><td class="num per-pass">${g.usdPerPass === null ? "no pass" : usd(g.usdPerPass)}</td></tr>`,
)}</table></div>`;
}

function totalsTable(id: string, head: string, rows: { name: Html; stats: PassStats }[]): Html {
  return html`<table class="eval" id="${id}"><tr><th>${head}</th><th>Pass rate</th><th>95 % interval</th><th>Passed / n</th><th>Errors</th><th>USD</th><th>Cost per pass</th></tr>
${rows.map(
  ({ name, stats: s }) =>
    html`<tr><td>${name}</td><td class="num rate">${percent(s.passRate)}</td><td class="num">${interval(s.wilson95)}</td><td class="num">${s.passes} / ${s.n}</td><td class="num">${s.errors}</td><td class="num">${usd(s.usd)}</td><td class="num per-pass">${s.usdPerPass === null ? "no pass" : usd(s.usdPerPass)}</td></tr>`,
)}</table>`;
}

function comparisons(
  summary: EvalPageInput["summary"],
  label: (m: string) => Html,
  scripted: Set<string>,
): Html {
  if (summary.comparisons.length === 0)
    return html`<p class="muted">No comparison: it needs two models with verdicts on the same tasks.</p>`;
  return html`<div id="comparisons">${summary.comparisons.map(
    (c) =>
      html`<div class="comparison"><p><strong>${label(c.a)} vs ${label(c.b)}</strong>: ${labelIn(c.text, label, scripted)}</p><p class="muted">${c.cells} paired cells · mean difference in pass rate (${label(c.a)} − ${label(c.b)}) ${signedPoints(c.meanDifference)}, 95 % interval ${signedPoints(c.ci95[0])} to ${signedPoints(c.ci95[1])} · ${c.better === "not distinguishable" ? "not distinguishable" : html`better: ${label(c.better)}`} · method: ${c.method}</p></div>`,
  )}</div>`;
}

/** Hostile text with every scripted model named in it labelled (the rest escaped as usual). */
function labelIn(text: string, label: (m: string) => Html, scripted: Set<string>): Html {
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

function trialTable(trials: LoadedTrial[], evalDir: string, label: (m: string) => Html): Html {
  if (trials.length === 0) return html`<p class="muted">No trial has ended yet.</p>`;
  const sorted = [...trials].sort(
    (a, b) =>
      a.result.task.localeCompare(b.result.task) ||
      a.result.variant.localeCompare(b.result.variant) ||
      a.result.model.localeCompare(b.result.model) ||
      a.result.repeat - b.result.repeat,
  );
  return html`<div class="wide"><table class="eval" id="trials"><tr><th>Trial</th><th>Task</th><th>Variant</th><th>Model</th><th>Repeat</th><th>Status</th><th>Cause</th><th>Iterations</th><th>Wall time</th><th>Tokens</th><th>USD</th><th>Run report</th></tr>
${sorted.map(({ result: r }) => {
  const tokens = r.tokens.input + r.tokens.output + r.tokens.cacheRead + r.tokens.cacheWrite;
  return html`<tr class="trial" data-status="${r.status}" data-trial="${r.trialId}"><td><code>${r.trialId}</code></td><td>${r.task}</td><td>${r.variant}</td><td>${label(r.model)}</td><td class="num">${r.repeat}</td><td><span class="status ${r.status}">${r.status}</span><br><span class="muted">${r.verdict}, exit ${r.exitCode}</span></td><td>${r.cause}</td><td class="num">${r.iterations}</td><td class="num">${seconds(r.wallMs)}</td><td class="num">${tokenShort(tokens)}</td><td class="num">${usd(r.usd)}</td><td>${runLink(r.runDir, r.runId, evalDir)}</td></tr>`;
})}</table></div>`;
}

/**
 * A relative link to the run's report when it is a regular file there (no link followed); else
 * says which is missing. Always "./" or "../" plus URL-encoded segments: a run folder named like
 * a URL (`javascript:...`) stays a path.
 */
function runLink(runDir: string, runId: string, evalDir: string): Html {
  if (runDir === "")
    return html`<span class="missing">no run folder (the trial ended before its run started)</span>`;
  const report = join(runDir, "report.html");
  if (!lstatSync(report, { throwIfNoEntry: false })?.isFile())
    return html`<span class="missing">no run report at <code>${report}</code>; build it with <code>scifi report ${runId || runDir}</code></span>`;
  const rel = relative(evalDir, report).split("/").map(encodeURIComponent).join("/");
  const href = rel.startsWith("..") ? rel : `./${rel}`;
  return html`<a class="run-report" href="${href}">${runId || "report"}</a>`;
}
