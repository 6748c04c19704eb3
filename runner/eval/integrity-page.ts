// The eval page's integrity tables (docs/integrity.md): per model and per variant, the integrity
// events per trial with their interval, the share of trials with at least one (Wilson), and the
// events by kind. Every string from summary.json is hostile and goes through the report's escaping.
import { type Html, html } from "../report/escape.ts";
import { percent } from "../report/format.ts";
import type { EvalSummary, IntegrityStats } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";
import type { TrialSets } from "./trial-sets.ts";

/** The trials integrity-stats.ts counts: judged, with integrity counts in their result. */
const counted = (r: TrialResult) => r.integrity !== undefined;

export function integrityTables(summary: EvalSummary, label: (m: string) => Html, sets: TrialSets): Html {
  return html`<h2 id="integrity">Integrity: what the runner refused, undid or overrode</h2>
<p class="muted">Events per trial counts every integrity event of a trial's run; the share counts trials with at least one (docs/integrity.md). Errors and trials recorded before these counts existed are left out (n).</p>
<h3>Per model</h3>
${table(
  "integrity-model",
  "Model",
  summary.byModel.map((m) => ({
    name: label(m.model),
    what: `Model ${m.model} — integrity counted`,
    stats: m.integrity,
    trials: sets.of((r) => r.model === m.model && counted(r), "judged"),
  })),
  sets,
)}
<h3>Per variant (description level)</h3>
${table(
  "integrity-variant",
  "Variant",
  summary.byVariant.map((v) => ({
    name: html`${v.variant}`,
    what: `Variant ${v.variant} — integrity counted`,
    stats: v.integrity,
    trials: sets.of((r) => r.variant === v.variant && counted(r), "judged"),
  })),
  sets,
)}
${
  (summary.integrityComparisons ?? []).length > 0
    ? html`<h3>Between models (Fisher's exact test on the shares)</h3><ul id="integrity-comparisons">${(summary.integrityComparisons ?? []).map((c) => html`<li>${label(c.a)} / ${label(c.b)}: ${sets.link(c.text, { what: `${c.a} / ${c.b} — both models' trials with integrity counted`, trials: sets.of((r) => (r.model === c.a || r.model === c.b) && counted(r), "judged"), expect: { n: c.aTrials[1] + c.bTrials[1] } })}</li>`)}</ul>`
    : ""
}`;
}

function table(
  id: string,
  head: string,
  rows: { name: Html; what: string; stats: IntegrityStats | undefined; trials: TrialResult[] }[],
  sets: TrialSets,
): Html {
  return html`<table class="eval" id="${id}"><tr><th>${head}</th><th>Events per trial</th><th>95 % interval</th><th>Trials with events</th><th>95 % interval</th><th>n</th><th>By kind (events, trials)</th></tr>
${rows.map(({ name, what, stats: s, trials }) => {
  if (s === undefined)
    return html`<tr><td>${name}</td><td colspan="6" class="muted">not in this summary (computed before integrity counts)</td></tr>`;
  const v = (content: string) => sets.link(content, { what, trials, expect: { n: s.n } });
  const withEvents = trials.filter((r) => total(r) > 0);
  return html`<tr class="integrity-row"><td>${name}</td><td class="num events">${v(s.eventsPerTrial.mean.toFixed(2))}</td><td class="num">${v(`${s.eventsPerTrial.ci95[0].toFixed(2)} – ${s.eventsPerTrial.ci95[1] === null ? "?" : s.eventsPerTrial.ci95[1].toFixed(2)}`)}</td><td class="num share">${v(percent(s.share))} (${sets.link(String(s.trialsWithEvents), { what: `${what}, with at least one event`, trials: withEvents, expect: { n: s.trialsWithEvents } })})</td><td class="num">${v(`${percent(s.wilson95[0])} – ${percent(s.wilson95[1])}`)}</td><td class="num">${v(String(s.n))}</td><td>${kinds(s, sets, what, trials)}</td></tr>`;
})}</table>`;
}

function total(r: TrialResult): number {
  return Object.values(r.integrity ?? {}).reduce((sum, n) => sum + n, 0);
}

function kinds(s: IntegrityStats, sets: TrialSets, what: string, trials: TrialResult[]): Html {
  const entries = Object.entries(s.byKind);
  if (entries.length === 0) return html`<span class="muted">none</span>`;
  return html`${entries.map(([kind, k], i) => html`${i > 0 ? "; " : ""}<code>${kind}</code> ${sets.link(`${k.events}, ${k.trials}`, { what: `${what}, with events of kind ${kind}`, trials: trials.filter((r) => (r.integrity?.[kind] ?? 0) > 0), expect: { n: k.trials } })}`)}`;
}
