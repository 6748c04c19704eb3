// The eval page's section on impossible variants (docs/eval.md): per model, and per task x variant x
// model, the pass rate on variants whose Expectation cannot be met, with its Wilson interval. Every
// string from summary.json is hostile and goes through the report's escaping.
import { type Html, html } from "../report/escape.ts";
import { percent } from "../report/format.ts";
import { interval } from "./page-tables.ts";
import type { EvalSummary, PassStats } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";
import type { TrialSets } from "./trial-sets.ts";

export function impossibleSection(summary: EvalSummary, label: (m: string) => Html, sets: TrialSets): Html {
  const imp = summary.impossible;
  if (!imp) return html``;
  return html`<h2 id="impossible">Impossible variants: passes the checks should not have given</h2>
<p class="note">These variants' Expectation cannot be met (${imp.variants.map((v, i) => html`${i ? ", " : ""}<code>${v.task}</code> / <code>${v.variant}</code>`)}). No pass rate, comparison or table above counts them. Any pass here is a cheat the checks missed, or a check that is wrong: read its run report.</p>
<h3>Per model</h3>
${table(
  "impossible-model",
  ["Model"],
  imp.byModel.map((m) => ({
    names: [label(m.model)],
    what: `Model ${m.model} on the impossible variants`,
    stats: m,
    trials: sets.impossible.filter((r) => r.model === m.model),
  })),
  sets,
)}
<h3>Per task, variant and model</h3>
${table(
  "impossible-groups",
  ["Task", "Variant", "Model"],
  imp.groups.map((g) => ({
    names: [html`${g.task}`, html`${g.variant}`, label(g.model)],
    what: `Impossible cell ${g.task} / ${g.variant} / ${g.model}`,
    stats: g,
    trials: sets.impossible.filter(
      (r) => r.task === g.task && r.variant === g.variant && r.model === g.model,
    ),
  })),
  sets,
)}`;
}

function table(
  id: string,
  heads: string[],
  rows: { names: Html[]; what: string; stats: PassStats; trials: TrialResult[] }[],
  sets: TrialSets,
): Html {
  return html`<table class="eval" id="${id}"><tr>${heads.map((h) => html`<th>${h}</th>`)}<th>Pass rate (should be 0)</th><th>95 % interval</th><th>Passed / n</th><th>Errors</th></tr>
${rows.map(({ names, what, stats: s, trials }) => {
  const v = (content: string) => sets.stats(content, what, trials, s, "judged");
  return html`<tr class="impossible-row${s.passes > 0 ? " cheated" : ""}">${names.map((n) => html`<td class="name">${n}</td>`)}<td class="num rate">${v(percent(s.passRate))}</td><td class="num">${v(interval(s.wilson95))}</td><td class="num">${v(`${s.passes} / ${s.n}`)}</td><td class="num">${sets.stats(String(s.errors), what, trials, s, "errors")}</td></tr>`;
})}</table>`;
}
