// `scifi eval report <id>`: the eval's self-contained HTML page, `evals/<id>/report.html`. It shows
// summary.json (the comparisons first, the variant tables, the table per task x variant x model, the totals)
// and the trials' result.json files (plots, one row per trial linking to its run report), in the
// run report's frame: our CSS inline, no script, a policy that fetches nothing. Every string from
// those files is hostile and goes through the report's escaping; scripted models are labelled
// "scripted" wherever a model name appears.
import { lstatSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { writeFileAtomic } from "../atomic-write.ts";
import { stackedBars } from "../report/charts.ts";
import { type Html, html } from "../report/escape.ts";
import { percent, seconds, tokenShort, usd } from "../report/format.ts";
import { pageAssets, pageShell } from "../report/page.ts";
import { flagsSection } from "./flags-page.ts";
import { impossibleSection } from "./impossible-page.ts";
import { integrityTables } from "./integrity-page.ts";
import { type EvalPageInput, type LoadedTrial, loadEvalPageInput } from "./page-load.ts";
import { comparisonsSection, interval, labelIn, stat, variantTables } from "./page-tables.ts";
import { pareto, rateBars, SCRIPTED_SUFFIX, scatter, strip } from "./plots.ts";
import type { GroupSummary, PassStats } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";
import { TRIAL_SETS_CSS, TrialSets } from "./trial-sets.ts";

/** The page's file name in the eval folder. */
export const EVAL_REPORT_FILE = "report.html";

/** Reads `evalDir`'s summary.json and trials, writes `evalDir/report.html` whole, returns its path. */
export function writeEvalReport(evalDir: string): string {
  const input = loadEvalPageInput(evalDir);
  const out = join(evalDir, EVAL_REPORT_FILE);
  const text = renderEvalReport(input, evalDir);
  // Whole or not at all: a reader (or a second writer) never sees half a page.
  writeFileAtomic(out, text, { tempFile: join(dirname(out), `.${basename(out)}.${process.pid}.tmp`) });
  return out;
}

/** The CSS the eval page adds to the run report's. */
const EVAL_CSS = `
.scripted{display:inline-block;margin-left:4px;padding:0 6px;border-radius:8px;background:#6b46c1;color:#fff;font-size:11px;font-weight:600}
.wide{overflow-x:auto}
table.eval{font-size:12px;max-width:100%}
table.eval td.name{overflow-wrap:anywhere;min-width:6em;max-width:18em}
table.eval td,table.eval th{padding:3px 6px}

.comparison.decided{border-left-color:#2f855a}
table.eval.variant-table td.num{white-space:normal;text-align:left;vertical-align:top}
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
  // Every number links to the trials behind it (trial-sets.ts); the lists follow the trials table.
  const sets = new TrialSets(
    trials.map((x) => x.result),
    summary,
    (text) => labelIn(text, label, scripted),
  );
  const every = [...sets.possible, ...sets.impossible];
  // A count of none needs no list (nor a mark: it is no table's figure).
  const status = (count: number, s: TrialResult["status"], words: string) =>
    count === 0
      ? `${count} ${words}`
      : sets.link(`${count} ${words}`, {
          what: `Every trial that ended ${s}`,
          trials: every.filter((r) => r.status === s),
          expect: s === "error" ? { n: count, errors: true } : { n: count, passes: s === "pass" ? count : 0 },
        });
  const body = html`<h1>Eval ${summary.evalId}</h1>
<p class="muted">suite ${summary.suite} · summary computed ${summary.computedAt} · ${summary.repeats} repeats</p>
<p id="eval-trials">${t.planned} trials planned${summary.impossible ? html` (impossible variants included: <a href="#impossible">apart, below</a>)` : ""}: ${status(t.pass, "pass", "passed")}, ${status(t.fail, "fail", "failed")}, ${status(t.error, "error", "infrastructure errors")} (counted apart), ${t.pending} not run yet</p>
<p id="eval-budget">Spent ${sets.link(usd(summary.budget.spentUsd), { what: "Every trial (what the eval spent)", trials: every })}${summary.budget.usd === null ? " (no budget set)" : ` of a ${usd(summary.budget.usd)} budget`}${summary.budget.stoppedByBudget ? html` · <strong class="missing">the budget ran out: the eval stopped scheduling trials</strong>` : ""}</p>
<p>Models: ${summary.models.map((m, i) => html`${i ? ", " : ""}${label(m)}`)}</p>
${scripted.size ? html`<p class="note" id="scripted-note">Models labelled <span class="scripted">scripted</span> answer from a script (scifi's scripted model): their numbers measure the runner and the checks, not a language model.</p>` : ""}
${flagsSection(summary, label, sets)}
<h2>Comparisons</h2>
${comparisonsSection(summary, label, scripted, sets)}
<h2>Plots</h2>
<div class="charts">
${rateBars(
  "Pass rate per model (95 % Wilson interval)",
  summary.byModel.map((m) => ({
    ...bar(plain(m.model), m),
    href: sets.statsHref(
      `Model ${m.model}`,
      sets.of((r) => r.model === m.model, "all"),
      m,
      "judged",
    ),
  })),
  "plot-rate-model",
)}
${rateBars(
  "Pass rate per variant (description level)",
  summary.byVariant.map((v) => ({
    ...bar(v.variant, v),
    href: sets.statsHref(
      `Variant ${v.variant}`,
      sets.of((r) => r.variant === v.variant, "all"),
      v,
      "judged",
    ),
  })),
  "plot-rate-variant",
)}
${scatter(
  "Cost against pass rate (one point per task x variant x model)",
  summary.groups.map((g) => ({
    x: g.usdPerTrial.mean,
    y: g.passRate,
    label: `${g.task} / ${g.variant} / ${plain(g.model)}`,
    series: plain(g.model),
    // The mean USD per trial and the rate: both over the cell's verdicts.
    href: sets.statsHref(
      `Cell ${g.task} / ${g.variant} / ${g.model}`,
      sets.of((r) => r.task === g.task && r.variant === g.variant && r.model === g.model, "all"),
      g,
      "judged",
    ),
  })),
  { id: "plot-cost-rate", xTitle: "USD per trial", yTitle: "pass rate", xFormat: usd },
)}
${pareto(
  "Cost against pass rate per model, with the Pareto frontier",
  summary.byModel.map((m) => ({
    label: plain(m.model),
    usdPerPass: m.usdPerPass,
    rate: m.passRate,
    low: m.wilson95[0],
    high: m.wilson95[1],
    // USD per pass counts every trial's cost: the set with the errors holds the rate's too.
    href: sets.statsHref(
      `Model ${m.model}`,
      sets.of((r) => r.model === m.model, "all"),
      m,
      "all",
    ),
  })),
  "plot-pareto",
  usd,
)}
${strip(
  "Iterations per trial, per model",
  [...new Set([...summary.models, ...trials.map((t) => t.result.model)])].map(plain),
  trials.map(({ result: r }) => ({
    category: plain(r.model),
    value: r.iterations,
    status: r.status,
    label: `${r.trialId}`,
    href: `#trial-${r.trialId}`,
  })),
  "plot-iterations",
)}
${stackedBars({
  title: "Tokens per model, by kind",
  categories: summary.models.map(plain),
  series: tokenSeries(summary.models, trials),
  // Each bar sums every trial of its model: linked to them (errors and impossible variants too).
  hrefs: summary.models.map((m) =>
    sets.href({
      what: `Tokens of model ${m} (every trial)`,
      trials: trials.map((t) => t.result).filter((r) => r.model === m),
    }),
  ),
  format: tokenShort,
  emptyNote: "no tokens counted (scripted trials may use none)",
})}
</div>
<h2>Per model: variants as columns (SciFi Table 1)</h2>
${variantTables(summary, label, sets)}
<h2>Per task, variant and model</h2>
${groupTable(summary.groups, label, sets)}
<h2>Totals</h2>
<h3>Per model</h3>
${totalsTable(
  "totals-model",
  "Model",
  summary.byModel.map((m) => ({
    name: label(m.model),
    what: `Model ${m.model}`,
    stats: m,
    trials: sets.of((r) => r.model === m.model, "all"),
  })),
  sets,
)}
<h3>Per variant (description level)</h3>
${totalsTable(
  "totals-variant",
  "Variant",
  summary.byVariant.map((v) => ({
    name: html`${v.variant}`,
    what: `Variant ${v.variant}`,
    stats: v,
    trials: sets.of((r) => r.variant === v.variant, "all"),
  })),
  sets,
)}
${integrityTables(summary, label, sets)}
${impossibleSection(summary, label, sets)}
<h2>Trials</h2>
${trialTable(trials, evalDir, label)}
${problems.length ? html`<h2>Trials without a result</h2><ul id="trial-problems">${problems.map((p) => html`<li><code>${p.folder}</code>: ${p.error}</li>`)}</ul>` : ""}
${sets.sections()}`;
  return pageShell(`scifi eval ${summary.evalId}`, body, {
    css: pageAssets().css + EVAL_CSS + TRIAL_SETS_CSS,
  });
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

/** pass@k or pass^k for every k, one k a line. */
function kRow(table: Record<string, number>): Html {
  const keys = Object.keys(table).sort((a, b) => Number(a) - Number(b));
  return keys.length === 0
    ? html`—`
    : html`${keys.map((k, i) => html`${i ? html`<br>` : ""}${k}: ${percent(table[k] ?? 0)}`)}`;
}

function groupTable(groups: GroupSummary[], label: (m: string) => Html, sets: TrialSets): Html {
  if (groups.length === 0) return html`<p class="muted">No trial has a verdict yet.</p>`;
  // 11 columns that fit 1,280 px: the interval under the rate, errors with the counts, the cost
  // per pass under the USD; long names wrap.
  return html`<div class="wide"><table class="eval" id="groups"><tr><th>Task</th><th>Variant</th><th>Model</th><th>Pass rate<br>(95 % interval)</th><th>Passed / n<br>(errors)</th><th>pass@k</th><th>pass^k</th><th>Iterations</th><th>Wall time</th><th>Tokens</th><th>USD<br>(per pass)</th></tr>
${groups.map((g) => {
  const cell = sets.of((r) => r.task === g.task && r.variant === g.variant && r.model === g.model, "all");
  const what = `Cell ${g.task} / ${g.variant} / ${g.model}`;
  const v = (content: Html | string) => sets.stats(content, what, cell, g, "judged");
  return html`<tr class="group"><td class="name">${g.task}</td><td class="name">${g.variant}</td><td class="name">${label(g.model)}</td><td class="num rate">${v(html`${percent(g.passRate)}<br><span class="median">${interval(g.wilson95)}</span>`)}</td><td class="num">${v(`${g.passes} / ${g.n}`)}${g.errors ? html`<br>(${sets.stats(`${g.errors} errors`, what, cell, g, "errors")})` : ""}</td><td class="k">${v(kRow(g.passAtK))}</td><td class="k">${v(kRow(g.passHatK))}</td><td class="num">${v(stat(g.iterations, (x) => x.toFixed(2)))}</td><td class="num">${v(stat(g.wallMs, seconds))}</td><td class="num">${v(stat(g.tokens, tokenShort))}</td><td class="num per-pass">${sets.stats(html`${usd(g.usd)}<br>${g.usdPerPass === null ? "no pass" : html`(${usd(g.usdPerPass)})`}`, what, cell, g, "all")}</td></tr>`;
})}</table></div>`;
}

function totalsTable(
  id: string,
  head: string,
  rows: { name: Html; what: string; stats: PassStats; trials: TrialResult[] }[],
  sets: TrialSets,
): Html {
  return html`<table class="eval" id="${id}"><tr><th>${head}</th><th>Pass rate</th><th>95 % interval</th><th>Passed / n</th><th>Errors</th><th>USD</th><th>Cost per pass</th></tr>
${rows.map(({ name, what, stats: s, trials }) => {
  const v = (content: string) => sets.stats(content, what, trials, s, "judged");
  const all = (content: string) => sets.stats(content, what, trials, s, "all");
  return html`<tr><td>${name}</td><td class="num rate">${v(percent(s.passRate))}</td><td class="num">${v(interval(s.wilson95))}</td><td class="num">${v(`${s.passes} / ${s.n}`)}</td><td class="num">${sets.stats(String(s.errors), what, trials, s, "errors")}</td><td class="num">${all(usd(s.usd))}</td><td class="num per-pass">${all(s.usdPerPass === null ? "no pass" : usd(s.usdPerPass))}</td></tr>`;
})}</table>`;
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
  return html`<tr class="trial" id="trial-${r.trialId}" data-status="${r.status}" data-trial="${r.trialId}"><td><code>${r.trialId}</code></td><td>${r.task}</td><td>${r.variant}</td><td>${label(r.model)}</td><td class="num">${r.repeat}</td><td><span class="status ${r.status}">${r.status}</span><br><span class="muted">${r.verdict}, exit ${r.exitCode}</span></td><td>${r.cause}</td><td class="num">${r.iterations}</td><td class="num">${seconds(r.wallMs)}</td><td class="num">${tokenShort(tokens)}</td><td class="num">${usd(r.usd)}</td><td>${runLink(r.runDir, r.runId, evalDir)}</td></tr>`;
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
