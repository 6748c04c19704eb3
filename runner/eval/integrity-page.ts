// The eval page's integrity tables (docs/integrity.md): per model and per variant, the integrity
// events per trial with their interval, the share of trials with at least one (Wilson), and the
// events by kind. Every string from summary.json is hostile and goes through the report's escaping.
import { type Html, html } from "../report/escape.ts";
import { percent } from "../report/format.ts";
import type { EvalSummary, IntegrityStats } from "./summary.ts";

export function integrityTables(summary: EvalSummary, label: (m: string) => Html): Html {
  return html`<h2 id="integrity">Integrity: what the runner refused, undid or overrode</h2>
<p class="muted">Events per trial counts every integrity event of a trial's run; the share counts trials with at least one (docs/integrity.md). Errors and trials recorded before these counts existed are left out (n).</p>
<h3>Per model</h3>
${table(
  "integrity-model",
  "Model",
  summary.byModel.map((m) => ({ name: label(m.model), stats: m.integrity })),
)}
<h3>Per variant (description level)</h3>
${table(
  "integrity-variant",
  "Variant",
  summary.byVariant.map((v) => ({ name: html`${v.variant}`, stats: v.integrity })),
)}
${
  (summary.integrityComparisons ?? []).length > 0
    ? html`<h3>Between models (Fisher's exact test on the shares)</h3><ul id="integrity-comparisons">${(summary.integrityComparisons ?? []).map((c) => html`<li>${label(c.a)} / ${label(c.b)}: ${c.text}</li>`)}</ul>`
    : ""
}`;
}

function table(id: string, head: string, rows: { name: Html; stats: IntegrityStats | undefined }[]): Html {
  return html`<table class="eval" id="${id}"><tr><th>${head}</th><th>Events per trial</th><th>95 % interval</th><th>Trials with events</th><th>95 % interval</th><th>n</th><th>By kind (events, trials)</th></tr>
${rows.map(({ name, stats: s }) =>
  s === undefined
    ? html`<tr><td>${name}</td><td colspan="6" class="muted">not in this summary (computed before integrity counts)</td></tr>`
    : html`<tr class="integrity-row"><td>${name}</td><td class="num events">${s.eventsPerTrial.mean.toFixed(2)}</td><td class="num">${s.eventsPerTrial.ci95[0].toFixed(2)} – ${s.eventsPerTrial.ci95[1] === null ? "?" : s.eventsPerTrial.ci95[1].toFixed(2)}</td><td class="num share">${percent(s.share)} (${s.trialsWithEvents})</td><td class="num">${percent(s.wilson95[0])} – ${percent(s.wilson95[1])}</td><td class="num">${s.n}</td><td>${kinds(s)}</td></tr>`,
)}</table>`;
}

function kinds(s: IntegrityStats): Html {
  const entries = Object.entries(s.byKind);
  if (entries.length === 0) return html`<span class="muted">none</span>`;
  return html`${entries.map(([kind, k], i) => html`${i > 0 ? "; " : ""}<code>${kind}</code> ${k.events}, ${k.trials}`)}`;
}
