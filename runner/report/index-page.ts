// The index page over a runs folder: one row per run with state, cost, time and a link to its page.
import { type Html, html } from "./escape.ts";
import { seconds, usd } from "./format.ts";
import type { RunStatusView } from "./model.ts";
import { pageAssets, pageShell } from "./page.ts";

export interface IndexRow {
  runId: string;
  /** Link to the run's report, relative to the index page. */
  href: string;
  sam: string;
  status: RunStatusView;
  reason: string;
  iterations: number;
  costUsd: number;
  tokens: number;
  calls: number;
  wallMs: number;
  started: string;
  chainOk: boolean;
  /** The replies came from a scripted model: the row says so beside its state. */
  scripted: boolean;
}

export function renderIndex(
  title: string,
  runsDir: string,
  rows: IndexRow[],
  problems: { dir: string; error: string }[],
): string {
  const total = rows.reduce((sum, r) => sum + r.costUsd, 0);
  // Helper calls (make-task, ask, ...) ran no task: listed apart, never as unfinished runs.
  const tasks = rows.filter((r) => r.status !== "helper");
  const helpers = rows.filter((r) => r.status === "helper");
  const head = html`<tr><th>Run</th><th>SAM</th><th>State</th><th>Iterations</th><th>Cost</th><th>Tokens</th><th>Calls</th><th>Wall time</th><th>Audit chain</th></tr>`;
  const body = html`<h1>Runs in ${title}</h1>
<p class="muted">${runsDir} · ${tasks.length} runs${helpers.length ? ` and ${helpers.length} helper calls` : ""} · ${usd(total)} in all</p>
<table class="runs" id="task-runs">${head}
${tasks.map(row)}</table>
${helpers.length ? html`<h2>Helper calls</h2><table class="runs" id="helper-runs">${head}${helpers.map(row)}</table>` : ""}
${problems.length ? html`<h2>Runs without a report</h2><ul>${problems.map((p) => html`<li><code>${p.dir}</code>: ${p.error}</li>`)}</ul>` : ""}`;
  // The index needs no script: its policy allows none.
  return pageShell(`scifi runs: ${title}`, body, { css: pageAssets().css });
}

function row(r: IndexRow): Html {
  return html`<tr class="run" data-status="${r.status}"><td><a href="${r.href}">${r.runId}</a><br><span class="muted">${r.started}</span></td><td>${r.sam}</td><td><span class="status ${r.status}">${r.status}</span>${r.scripted ? html` <span class="scripted">scripted</span>` : ""}<br><span class="muted">${r.reason}</span></td><td>${r.iterations}</td><td>${usd(r.costUsd)}</td><td>${r.tokens}</td><td>${r.calls}</td><td>${seconds(r.wallMs)}</td><td>${r.chainOk ? html`<span class="chain-ok">verified</span>` : html`<span class="chain-bad">broken</span>`}</td></tr>`;
}
