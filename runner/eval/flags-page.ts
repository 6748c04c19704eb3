// The eval page's flags (docs/eval.md, "Flags"), shown at the top: each task's audit and what
// cannot discriminate, then each model's pass rate over all tasks and without the flagged ones.
// Every name and finding comes from files and goes through the report's escaping.
import { type Html, html } from "../report/escape.ts";
import { percent } from "../report/format.ts";
import { FLAG_WORDS } from "./flags.ts";
import { interval } from "./page-tables.ts";
import type { EvalSummary, PassStats, TaskFlags } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";
import type { TrialSets } from "./trial-sets.ts";

function auditCell(t: TaskFlags): Html {
  if (t.audit === "skipped") return html`<span class="missing">not audited (--no-audit)</span>`;
  if (t.audit === "pending") return html`<span class="missing">not audited yet</span>`;
  if (t.audit.sound) return html`sound`;
  return html`<ul>${t.audit.findings.map((f) => html`<li>${f.text}</li>`)}</ul>`;
}

function rate(s: PassStats | undefined, sets: TrialSets, what: string, trials: TrialResult[]): Html {
  if (!s || s.n === 0) return sets.link("no verdict", { what, trials: [] });
  return sets.stats(
    html`${percent(s.passRate)} <span class="median">${interval(s.wilson95)}</span> (${s.passes} / ${s.n})`,
    what,
    trials,
    s,
    "judged",
  );
}

export function flagsSection(summary: EvalSummary, label: (model: string) => Html, sets: TrialSets): Html {
  const flags = summary.flags;
  if (!flags) return html``;
  return html`<h2>Checks and flags</h2>
<p class="note" id="eval-audit">${flags.audited ? "Each task's checks were audited before its trials (scifi check-task; its lazy agents are scripted): they must fail for an agent that does nothing, only claims, empties files or writes constants, and pass with the task's solution when it has one." : html`<strong class="missing">The checks were not audited (--no-audit).</strong>`}</p>
<div class="wide"><table class="eval" id="flags"><tr><th>Task</th><th>Audit</th><th>Flags</th></tr>
${flags.tasks.map(
  (t) =>
    html`<tr class="${t.flags.length ? "flagged" : ""}"><td class="name">${t.task}</td><td>${auditCell(t)}</td><td>${t.flags.length ? sets.link(html`<strong class="missing">${t.flags.map((f) => FLAG_WORDS[f]).join("; ")}</strong>`, { what: `Task ${t.task} — its trials with a verdict (the flags read them; the audit runs no trial)`, trials: sets.of((r) => r.task === t.task, "judged") }) : "none"}</td></tr>`,
)}</table></div>
<table class="eval" id="unflagged"><tr><th>Model</th><th>Pass rate, all tasks</th><th>Pass rate without the ${flags.flagged.length} flagged task(s)</th></tr>
${summary.byModel.map(
  (m) =>
    html`<tr><td>${label(m.model)}</td><td class="num">${rate(
      m,
      sets,
      `Model ${m.model}`,
      sets.of((r) => r.model === m.model, "all"),
    )}</td><td class="num">${rate(
      flags.byModelUnflagged.find((u) => u.model === m.model),
      sets,
      `Model ${m.model} without the flagged tasks`,
      sets.of((r) => r.model === m.model && !flags.flagged.includes(r.task), "all"),
    )}</td></tr>`,
)}</table>`;
}
