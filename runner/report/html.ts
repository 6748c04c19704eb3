// Renders a ReportModel to one self-contained HTML page: the header facts, the charts, the timeline
// of iterations, phases and calls, and the sections on approvals, network, memory and events. Every
// string from the run goes through the escaping `html` template; the page's frame and its
// Content-Security-Policy are in page.ts, the changes section in changes-html.ts, number and text
// formats in format.ts.

import { gzipSync } from "node:zlib";
import type { Totals } from "../audit/summary.ts";
import type { TapeContentBlock, TapeRequest, TapeUsage } from "../audit/types.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import type { SandboxSpec } from "../policy/spec.ts";
import { formatDuration } from "../run-folder/check-evidence.ts";
import type { CheckSummary } from "../sam/check-summary.ts";
import type { CallView, ToolCallView } from "./calls.ts";
import { changesSection } from "./changes-html.ts";
import { shareLine, stackedBars } from "./charts.ts";
import { critiqueSection } from "./critique-html.ts";
import { type Html, html, raw } from "./escape.ts";
import { failureBox } from "./failure-html.ts";
import {
  cacheShare,
  firstLine,
  fold,
  gib,
  percent,
  seconds,
  tokenCount,
  tokenShort,
  tokens,
  usd,
} from "./format.ts";
import type { InjectedView } from "./injected.ts";
import { integrityCalls, integrityFact, integritySection } from "./integrity.ts";
import type { ReportModel } from "./model.ts";
import { type PageAssets, pageAssets, pageShell } from "./page.ts";
import type { CheckView, IterationView, PhaseName, PhaseView, VerdictView } from "./timeline.ts";
import { toolInput } from "./tool-input-html.ts";

/** How a network record's kind reads in the table: the proxy's, or caught outside it (the capture). */
const KIND_LABEL: Record<string, string> = {
  connect: "CONNECT ",
  direct: "direct (not through the proxy) ",
  dns: "DNS query ",
  udp: "UDP ",
};

export function renderReport(model: ReportModel, assets: PageAssets = pageAssets()): string {
  const ctx: RenderContext = {
    issuedBy: toolCallOwners(model),
    bodies: [],
    integrity: integrityCalls(model.integrity),
  };
  const timeline = html`${model.timeline.map((i) => iteration(i, ctx))}`;
  const body = html`${header(model)}${critiqueSection(model.critiques)}${changesSection(model)}${charts(model)}${controls(model)}
<h2 id="timeline">Timeline</h2>${timeline}
${integritySection(model.integrity)}${approvalsSection(model)}${networkSection(model)}${injectedSection(model)}${memorySection(model)}${eventsSection(model)}
${packedBodies(ctx.bodies)}
<p class="muted">Built by scifi report from ${model.runDir} at ${new Date().toISOString()}.</p>`;
  return pageShell(`${model.sam.name}: ${model.status} (${model.runId})`, body, assets);
}

// ---- header -------------------------------------------------------------------------------------

function header(model: ReportModel): Html {
  const t = model.summary.totals;
  return html`<header>
<h1>${model.sam.name} <span class="status ${model.status}">${model.status}</span>${model.scripted ? html` <span class="scripted" id="scripted" title="the replies came from a scripted model, not a real one">scripted</span>` : ""}</h1>
<p class="reason">${model.reason}</p>
${model.failure ? failureBox(model.failure) : ""}
<table class="facts">
<tr><th>Run</th><td>${model.runId}</td></tr>
<tr><th>SAM</th><td>${model.sam.file ?? "(not recorded)"}<br><span class="muted">sha256 ${model.sam.sha256 ?? "(not recorded)"}</span></td></tr>
${model.sam.checks ? html`<tr><th>Checks</th><td id="fact-checks">${checksFact(model.sam.checks)}</td></tr>` : ""}
<tr><th>Iterations</th><td id="fact-iterations">${model.iterations}</td></tr>
<tr><th>Wall time</th><td id="fact-wall">${seconds(model.wallMs)}</td></tr>
<tr><th>Calls</th><td id="fact-calls">${t.calls} (${t.failedCalls} failed, ${t.retries} retries, ${t.fallbacks} fallbacks)</td></tr>
<tr><th>Tokens</th><td id="fact-tokens">${tokens(t.usage)}</td></tr>
<tr><th>Cache-read share</th><td id="fact-cache">${percent(t.cacheReadShare)}</td></tr>
<tr><th>Cost</th><td id="fact-cost">${usd(t.costUsd)}</td></tr>
<tr><th>Models</th><td>${modelsUsed(model.summary.byModel)}</td></tr>
${model.evolve.length > 0 ? html`<tr><th>Evolve proposals</th><td id="fact-evolve">ran under ${model.evolve.map((p, k) => html`${k > 0 ? "; " : ""}<code>${p.id}</code> (${p.kind}: ${p.title}, applied ${p.at})`)}</td></tr>` : ""}
<tr><th>Sandbox granted</th><td>${model.spec ? sandbox(model.spec) : html`<span class="muted">spec.json not found</span>`}</td></tr>
${integrityFact(model.integrity)}
<tr><th>Audit chain</th><td id="fact-chain">${chain(model)}</td></tr>
</table></header>`;
}

function checksFact(checks: CheckSummary): Html {
  const stages = `${checks.runStages} run stage(s), ${checks.compareStages} compare stage(s)`;
  if (checks.reviewOnly.length === 0) return html`${stages}; every Expectation item has a check`;
  return html`${stages}<br><strong>judged by the review alone (no check):</strong> ${checks.reviewOnly.map(
    (i, k) => html`${k > 0 ? ", " : ""}<code>${i.id}</code> ${i.text}`,
  )}`;
}

function modelsUsed(byModel: Record<string, Totals>): Html {
  const entries = Object.entries(byModel);
  if (entries.length === 0) return html`<span class="muted">no calls</span>`;
  return html`${entries.map(
    ([name, t]) =>
      html`<div>${name}: ${t.calls} calls, ${usd(t.costUsd)}, ${tokenCount(t.usage)} tokens</div>`,
  )}`;
}

function sandbox(spec: SandboxSpec): Html {
  const mounts = spec.mounts.map(
    (m) =>
      html`<li><code>${m.source}</code> → <code>${m.target}</code> <b>${m.readOnly ? "read-only" : "read-write"}</b> <span class="muted">(${m.reason})</span></li>`,
  );
  return html`<div>image <code>${spec.image}</code>, network <b>${spec.network ? "on" : spec.networkRules ? `only ${spec.networkRules.allow.join(", ")} (proxy)` : "off"}</b>, GPUs <b>${spec.gpus}</b>, ${spec.cpus} CPUs, ${gib(spec.memoryBytes)} memory, ${spec.pidsLimit} processes, wall time ${spec.walltimeSec} s${spec.scratch ? html`, scratch ${gib(spec.scratch.sizeBytes)} at <code>${spec.scratch.target}</code>` : ""}</div><ul class="mounts">${mounts}</ul>`;
}

function chain(model: ReportModel): Html {
  const c = model.chain;
  if (c.ok) return html`<span class="chain-ok">verified</span>: ${c.records} records, hash chain intact`;
  return html`<span class="chain-bad">BROKEN at line ${c.line}</span>: ${c.reason}. The records after it cannot be trusted.`;
}

// ---- charts -------------------------------------------------------------------------------------

const TOKEN_SERIES: { key: keyof TapeUsage; name: string; color: string }[] = [
  { key: "input", name: "input", color: "#4c78a8" },
  { key: "cacheWrite", name: "cache write", color: "#f58518" },
  { key: "cacheRead", name: "cache read", color: "#54a24b" },
  { key: "output", name: "output", color: "#b279a2" },
];

const PHASE_SERIES: { key: PhaseName; color: string }[] = [
  { key: "prescan", color: "#72b7b2" },
  { key: "work", color: "#4c78a8" },
  { key: "checks", color: "#eeca3b" },
  { key: "review", color: "#e45756" },
  { key: "critique", color: "#ff9da6" },
  { key: "final_review", color: "#9d755d" },
  { key: "other", color: "#bab0ac" },
];

function charts(model: ReportModel): Html {
  const per = model.charts.perIteration;
  const categories = per.map((p) => p.label);
  return html`<h2 id="charts">Charts</h2><div class="charts" id="chart-area">
${stackedBars({
  title: "Tokens per iteration",
  categories,
  series: TOKEN_SERIES.map((s) => ({ name: s.name, color: s.color, values: per.map((p) => p.usage[s.key]) })),
  format: (v) => tokenShort(v),
})}
${stackedBars({
  title: "Cost per iteration (USD)",
  categories,
  series: [{ name: "USD", color: "#e45756", values: per.map((p) => p.costUsd) }],
  format: (v) => `$${v < 1 ? v.toFixed(3) : v.toFixed(2)}`,
  emptyNote: "No cost recorded: every call cost $0 (scripted or unpriced models).",
})}
${shareLine(
  "Cache-read share per call",
  model.charts.cacheShare.map((p) => ({ label: `#${p.seq}`, value: p.share })),
)}
${stackedBars({
  title: "Time per phase (s)",
  categories: model.charts.phaseTimes.map((p) => p.label),
  series: PHASE_SERIES.map((s) => ({
    name: s.key.replace("_", " "),
    color: s.color,
    values: model.charts.phaseTimes.map((p) => (p.byPhase[s.key] ?? 0) / 1000),
  })),
  format: (v) => `${v.toFixed(1)} s`,
})}
</div>`;
}

// ---- search and filters -------------------------------------------------------------------------

function controls(model: ReportModel): Html {
  return html`<div class="controls" role="search">
<input type="search" id="search" placeholder="Search calls, tool input and output, check output…" aria-label="Search calls and check output">
<label>Role <select id="filter-role"><option value="">all</option>${model.roles.map((r) => html`<option value="${r}">${r}</option>`)}</select></label>
<label>Tool <select id="filter-tool"><option value="">all</option>${model.tools.map((t) => html`<option value="${t}">${t}</option>`)}</select></label>
<label><input type="checkbox" id="filter-failed"> failed only</label>
<span id="shown" class="muted">${model.summary.calls.length} calls</span>
</div>`;
}

// ---- timeline -----------------------------------------------------------------------------------

function iteration(view: IterationView, ctx: RenderContext): Html {
  return html`<section class="iteration" id="iteration-${view.iteration}">
<h3>${view.label} <span class="muted">· ${tokenCount(view.usage)} tokens · ${usd(view.costUsd)}</span></h3>
${view.notes.map((n) => html`<p class="note">${noteText(n)}</p>`)}
${view.phases.map((p) => phase(p, ctx))}
</section>`;
}

function noteText(event: HistoryRecord): string {
  switch (event.type) {
    case "limit":
      return `Limit hit (${event.limit}): ${event.detail}`;
    case "tampering":
      return event.problem
        ? `Tampering: ${event.file}: ${event.problem}`
        : `Tampering: ${event.file} changed (sha256 ${event.expected.slice(0, 12)}… → ${event.actual.slice(0, 12)}…)`;
    case "asset_cleanup":
      return `Removed from check asset folders before the checks: ${event.removed.join(", ")}`;
    case "deliverable_links":
      return `Links in the task folder that point outside it or nowhere: ${event.links.map((l) => `${l.path} → ${l.target} (${l.problem})`).join(", ")}`;
    case "direction_change":
      return `Direction changed: ${event.from} → ${event.to}`;
    case "assets_changed":
      return `SAM files and check assets that differ from what the last run of this task folder (${event.since}) captured: ${event.files.map((f) => `${f.rel} (${f.was === "(none)" ? "new" : f.now === "(none)" ? "gone" : `sha256 ${f.was.slice(0, 12)}… → ${f.now.slice(0, 12)}…`})`).join(", ")}. A person's edit, or something an earlier run left behind`;
    case "control":
      return controlNote(event);
    case "resumed":
      return `Resumed from phase ${event.fromPhase} (${event.discardedEvents} events discarded)`;
    case "memory_view":
      return `Pre-scan got the ${event.level} memory view: ${event.items} suggestion(s) from ${event.entryCount} entr${event.entryCount === 1 ? "y" : "ies"} (${event.tokens} of ${event.budget} tokens${event.omitted ? `; ${event.omitted} left out for the budget` : ""}): ${event.entries.join(", ")}`;
    case "sandbox_died":
      return event.inside
        ? `The ${event.phase} sandbox ended under a command (${event.detail}); what ran in it may have ended it, so that command failed and a fresh sandbox took the next call (${event.deaths} such in this phase)`
        : `The ${event.phase} sandbox was killed from outside (${event.detail}); a fresh sandbox ran the call again (death ${event.deaths} of this phase; a second ends the run)`;
    case "prescan":
      return `Pre-scan added skills beyond the task's list (site policy prescanAddsSkills): ${(event.addedSkills ?? []).join(", ")}`;
    default:
      return event.type;
  }
}

/** A person's `scifi ctl` decision as the report says it. */
function controlNote(event: Extract<HistoryRecord, { type: "control" }>): string {
  const who = event.by ? ` by ${event.by}` : "";
  if (event.refused) return `Control (${event.action})${who} refused: ${event.refused}`;
  if (event.action === "limits") {
    const changes = Object.keys(event.to ?? {}).map((k) => `${k} ${event.from?.[k]} → ${event.to?.[k]}`);
    return `Limits changed${who}: ${changes.join(", ")}`;
  }
  if (event.action === "pause") return `Pause asked${who}; taken at the next phase boundary`;
  if (event.action === "paused") return `Paused after phase ${event.phase ?? "?"} (sandboxes stopped)`;
  return `Resume asked${who}`;
}

function phase(view: PhaseView, ctx: RenderContext): Html {
  const title = view.name === "other" ? view.label : view.name.replace("_", " ");
  return html`<details class="phase" open data-phase="${view.name}"><summary>${title}${view.durationMs !== undefined ? ` · ${seconds(view.durationMs)}` : ""}${view.calls.length ? ` · ${view.calls.length} call${view.calls.length === 1 ? "" : "s"}` : ""}</summary>
${view.calls.map((c) => call(c, ctx))}
${view.checks.length ? checks(view.checks) : ""}
${view.verdicts.map(verdict)}
</details>`;
}

function call(view: CallView, ctx: RenderContext): Html {
  const s = view.summary;
  const where = [s.step !== undefined ? `step ${s.step}` : ""].filter(Boolean).join(" ");
  const tools = view.toolCalls.map((t) => t.name);
  const first = firstLine(
    s.error ? `ERROR ${s.error.message}` : s.text || (tools.length ? `→ ${tools.join(", ")}` : ""),
  );
  const index = ctx.bodies.push(callBody(view, ctx.issuedBy).value) - 1;
  return html`<details class="call${view.failed ? " failed" : ""}" id="call-${s.seq}" data-body="${index}" data-role="${s.role}" data-tools="${tools.join(" ")}" data-failed="${view.failed ? "1" : "0"}"><summary>#${s.seq} ${s.role}${where ? ` (${where})` : ""} · ${s.provider}/${s.model} · ${tokenCount(s.usage)} tok · ${usd(s.costUsd)} · ${s.latencyMs} ms${view.failed ? html` <span class="badge fail">failed</span>` : ""}${ctx.integrity.has(s.seq) ? html` <a class="badge fail integrity" href="#integrity" title="a defence refused, undid or overrode this call">integrity</a>` : ""} <span class="muted">${first}</span></summary>
</details>`;
}

interface RenderContext {
  issuedBy: IssuedBy;
  /** Calls an integrity event names: badged on the timeline. */
  integrity: Set<number>;
  /** Markup of each call's body (every run string in it escaped), in page order. */
  bodies: string[];
}

/**
 * The calls' bodies travel as one gzip-compressed JSON array (base64 in an inert <textarea>) and
 * enter the DOM when a call is opened: the browser parses a fraction of the bytes, so a 2,000-call
 * page is interactive fast. The page script inflates it with the browser's DecompressionStream.
 */
function packedBodies(bodies: string[]): Html {
  const packed = gzipSync(JSON.stringify(bodies)).toString("base64");
  return html`<textarea hidden disabled id="call-bodies" aria-hidden="true">${packed}</textarea>`;
}

function callBody(view: CallView, issuedBy: IssuedBy): Html {
  const s = view.summary;
  return html`${s.error ? html`<p class="chain-bad">${s.error.name}: ${s.error.message}</p>` : ""}
${s.attempts.length ? attempts(view) : ""}
${view.injected.length ? html`<p>Prompt carried: ${view.injected.map((i) => html`<a href="#injected-${i.seq}">${i.ref}</a> `)}</p>` : ""}
<div class="label">Usage</div><div>${tokens(s.usage)}; cache-read share ${percent(cacheShare(s.usage))}${s.stopReason ? `; stop: ${s.stopReason}` : ""}</div>
${s.thinking.map((t) => html`<div class="label">Thinking</div>${fold(t)}`)}
${s.text ? html`<div class="label">Response text</div>${fold(s.text)}` : ""}
${view.toolCalls.map(toolCall)}
${s.json !== undefined ? html`<div class="label">Structured answer</div>${fold(JSON.stringify(s.json, null, 2))}` : ""}
${request(view, issuedBy)}`;
}

function attempts(view: CallView): Html {
  return html`<div class="label">Failed attempts</div><ul>${view.summary.attempts.map(
    (a) =>
      html`<li>${a.outcome} after ${a.reason} on ${a.entry}${a.status ? ` (HTTP ${a.status})` : ""}${a.delayMs !== undefined ? `, waited ${a.delayMs} ms` : ""}: ${a.error}</li>`,
  )}</ul>`;
}

function toolCall(tool: ToolCallView): Html {
  const isError = tool.result?.isError === true;
  return html`<div class="tool${isError ? " error" : ""}" data-tool="${tool.name}"><div class="label">Tool call ${tool.name} <span class="muted">${tool.id}</span></div>${toolInput(tool.input)}
${tool.result ? html`<div class="label">${isError ? "Tool error" : "Tool output"}</div>${fold(tool.result.content)}` : html`<p class="muted">No result on the tape: the pass ended with this call.</p>`}</div>`;
}

/** The full request, with what repeats the previous call of the same conversation referenced, not copied. */
function request(view: CallView, issuedBy: IssuedBy): Html {
  const req = view.record.request;
  const prev = view.previous;
  const shared = prev?.sharedMessages ?? 0;
  const newMessages = req.messages.slice(shared);
  return html`<details class="request"><summary>Request: ${req.kind} rank ${req.rank}, ${req.messages.length} messages${shared ? ` (${newMessages.length} new)` : ""}, ${req.tools?.length ?? 0} tools</summary>
<div class="label">System prompt</div>${prev?.sameSystem ? html`<p class="muted">Same as <a href="#call-${prev.seq}">call #${prev.seq}</a>.</p>` : fold(req.system)}
${req.workspaceContext ? html`<div class="label">Workspace context</div>${fold(req.workspaceContext)}` : ""}
${toolDefinitions(req, prev)}
${shared ? html`<p class="muted">Messages 1–${shared}: as in <a href="#call-${prev?.seq}">call #${prev?.seq}</a>.</p>` : ""}
${newMessages.map((m, i) => html`<div class="label">Message ${shared + i + 1} (${m.role})</div>${m.content.map((b) => block(b, view.summary.seq, issuedBy))}`)}
${req.jsonSchema ? html`<div class="label">Answer schema ${req.jsonSchema.name}</div>${fold(JSON.stringify(req.jsonSchema.schema, null, 2))}` : ""}
</details>`;
}

function toolDefinitions(req: TapeRequest, prev: CallView["previous"]): Html {
  if (!req.tools?.length) return raw("");
  if (prev?.sameTools)
    return html`<p class="muted">Tools: ${req.tools.map((t) => t.name).join(", ")} (as in <a href="#call-${prev.seq}">call #${prev.seq}</a>).</p>`;
  return html`<details><summary>Tools: ${req.tools.map((t) => t.name).join(", ")}</summary>${req.tools.map(
    (t) =>
      html`<div class="label">${t.name}</div>${fold(`${t.description}\n\n${JSON.stringify(t.inputSchema, null, 2)}`)}`,
  )}</details>`;
}

/** toolUseId -> seq of the call that made the tool call (its input and output are shown there). */
type IssuedBy = Map<string, number>;

function toolCallOwners(model: ReportModel): IssuedBy {
  const owners: IssuedBy = new Map();
  for (const it of model.timeline)
    for (const p of it.phases)
      for (const c of p.calls) for (const t of c.toolCalls) owners.set(t.id, c.summary.seq);
  return owners;
}

/** One block of a request message; tool calls and results shown under an earlier call are linked, not copied. */
function block(b: TapeContentBlock, seq: number, issuedBy: IssuedBy): Html {
  const owner =
    b.type === "tool_use"
      ? issuedBy.get(b.id)
      : b.type === "tool_result"
        ? issuedBy.get(b.toolUseId)
        : undefined;
  if (owner !== undefined && owner < seq) {
    const what =
      b.type === "tool_use"
        ? `tool call ${b.name} (${b.id})`
        : `tool ${b.type === "tool_result" && b.isError ? "error" : "result"}`;
    return html`<p class="muted">${what}: shown under <a href="#call-${owner}">call #${owner}</a>.</p>`;
  }
  switch (b.type) {
    case "text":
      return fold(b.text);
    case "thinking":
      return html`<div class="muted">thinking</div>${fold(b.thinking)}`;
    case "tool_use":
      return html`<div class="muted">tool call ${b.name} (${b.id})</div>${toolInput(b.input)}`;
    case "tool_result":
      return html`<div class="muted">tool ${b.isError ? "error" : "result"} for ${b.toolUseId}</div>${fold(b.content)}`;
    default:
      return fold(JSON.stringify(b));
  }
}

function checks(list: CheckView[]): Html {
  return html`<table class="checks"><tr><th>Check</th><th>Item</th><th>Result</th><th>Command and output</th></tr>${list.map(
    (c) =>
      html`<tr data-check="${c.id}"><td>${c.id}</td><td>${c.itemId ?? ""}</td><td><span class="badge ${c.passed ? "pass" : "fail"}">${c.passed ? "passed" : "failed"}</span> exit ${c.exitCode}${c.durationMs !== undefined ? html`<span class="duration">, ${formatDuration(c.durationMs)}</span>` : ""}</td><td>${c.command ? html`<code>${c.command}</code>` : ""}<div class="muted stage">${checkWhere(c)}</div>${c.output ? fold(c.output) : ""}</td></tr>`,
  )}</table>`;
}

/** Which stage a check was and where it ran; a compare stage's output is the people's only. */
function checkWhere(c: CheckView): string {
  const where = c.sandbox ? ` in sandbox ${c.sandbox}` : "";
  return c.compare
    ? `compare stage${where}; its output and exit code are withheld from the agents and shown here for people`
    : `run stage${where}`;
}

/** Which part failed the node: the checks, the review's items, or both (never the one that passed). */
function verdictWhy(v: VerdictView): string {
  const failed = v.items.filter((i) => !i.pass).map((i) => i.id);
  const review = failed.length
    ? `the review failed ${failed.join(", ")}`
    : v.items.length
      ? "the review passed every item"
      : "the review gave no item verdicts";
  if (v.passed) return "every check and review item passed";
  if (v.blocked) return `blocked: ${v.blocked}`;
  return v.checksPassed ? review : `the checks failed; ${review}`;
}

function verdict(v: VerdictView): Html {
  return html`<div class="verdict"><div class="label">Verdict on ${v.node}: <span class="badge ${v.passed ? "pass" : "fail"}">${v.passed ? "passed" : "failed"}</span> <span class="verdict-why">${verdictWhy(v)}</span></div>
<table class="verdicts"><tr><th>Item</th><th>Expectation</th><th>Verdict</th><th>Evidence cited</th></tr>${v.items.map(
    (i) =>
      html`<tr><td>${i.id}</td><td>${i.text ?? ""}</td><td><span class="badge ${i.pass ? "pass" : "fail"}">${i.pass ? "pass" : "fail"}</span></td><td class="evidence">${i.evidence ?? html`<span class="muted">not recorded</span>`}</td></tr>`,
  )}</table>
${v.findings.length ? html`<div class="label">Findings</div><ul>${v.findings.map((f) => html`<li>${f}</li>`)}</ul>` : ""}
${v.fixes.length ? html`<div class="label">Fixes for the next iteration</div><ul>${v.fixes.map((f) => html`<li>${f}</li>`)}</ul>` : ""}
${v.blocked ? html`<p class="note">Blocked: ${v.blocked}</p>` : ""}</div>`;
}

// ---- memory, skills, events ---------------------------------------------------------------------

function injectedSection(model: ReportModel): Html {
  const callAfter = new Map<number, number>();
  for (const it of model.timeline)
    for (const p of it.phases)
      for (const c of p.calls) for (const i of c.injected) callAfter.set(i.seq, c.summary.seq);
  return html`<h2 id="injected">Memory and skills that entered prompts</h2>${
    model.injected.length === 0
      ? html`<p class="muted">None: no memory note or skill text was put into any prompt of this run.</p>`
      : model.injected.map((i) => injected(i, callAfter.get(i.record.seq)))
  }`;
}

function injected(view: InjectedView, callSeq: number | undefined): Html {
  const r = view.record;
  return html`<details class="injected" id="${view.anchor}"><summary>${r.source} <b>${r.ref}</b> into ${r.role}${callSeq !== undefined ? html` (<a href="#call-${callSeq}">call #${callSeq}</a>)` : ""} <span class="muted">sha256 ${r.sha256.slice(0, 12)}…</span></summary>
${view.entries ? html`<p>Memory view of the entries ${view.entries.join(", ")}</p>` : ""}${view.text !== undefined ? html`<p class="muted">Text verified against the recorded hash.</p>${fold(view.text || "(empty)")}` : html`<p class="note">${view.missing}</p>`}</details>`;
}

function memorySection(model: ReportModel): Html {
  return html`<h2 id="memory">Memory written by this run</h2>${
    model.memoryWritten.length === 0
      ? html`<p class="muted">None.</p>`
      : model.memoryWritten.map(
          (m) =>
            html`<details class="memory" open><summary>${m.scope} memory: <b>${m.title}</b> <span class="muted">${m.meta}</span></summary><p class="muted">${m.file}</p>${fold(m.body)}</details>`,
        )
  }`;
}

function approvalsSection(model: ReportModel): Html {
  if (model.approvals.length === 0) return raw("");
  const decision = (a: ReportModel["approvals"][number]): string =>
    a.state === "requested"
      ? "awaiting approval"
      : a.state === "timed_out"
        ? `timed out at ${a.at ?? "?"} (the run ended blocked)`
        : `${a.state} by ${a.who ?? "?"} at ${a.at ?? "?"}`;
  return html`<h2 id="approvals">Approvals</h2><table class="approvals"><tr><th>request</th><th>action</th><th>what</th><th>asked</th><th>decision</th><th>note</th></tr>${model.approvals.map(
    (a) =>
      html`<tr><td>${a.id}</td><td>${a.action}</td><td>${a.summary}</td><td>${a.requestedAt}</td><td><b>${decision(a)}</b></td><td>${a.note ?? ""}</td></tr>`,
  )}</table>`;
}

function networkSection(model: ReportModel): Html {
  if (model.network.length === 0) return raw("");
  return html`<h2 id="network">Network (through the run's proxy)</h2><table class="network"><tr><th>time</th><th>sandbox</th><th>to</th><th>verdict</th><th>rule</th><th>bytes out / in</th></tr>${model.network.map(
    (n) =>
      html`<tr><td>${n.time}</td><td>${n.sandbox}</td><td>${KIND_LABEL[n.kind] ?? ""}${n.host}:${n.port}</td><td><b>${n.allowed ? "allowed" : "refused"}</b>${n.reason ? html` <span class="muted">${n.reason}</span>` : ""}</td><td>${n.rule}</td><td>${n.bytesOut} / ${n.bytesIn}</td></tr>`,
  )}</table>`;
}

function eventsSection(model: ReportModel): Html {
  if (model.events.length === 0) return raw("");
  return html`<h2 id="events">Events on the audit tape</h2><ul>${model.events.map(
    (e) =>
      html`<li>#${e.seq} ${e.time} <b>${e.event}</b> ${e.data ? JSON.stringify(eventData(e, model.runId)) : ""}</li>`,
  )}</ul>`;
}

/** Characters of a recorded tool output the page shows: a night's outputs would make it megabytes. */
const TOOL_OUTPUT_PREVIEW = 300;

/** An event's data as shown: a `tool_output`'s text cut to a preview that says where the rest is. */
function eventData(e: ReportModel["events"][number], runId: string): unknown {
  const text = e.data?.text;
  if (e.event !== "tool_output" || typeof text !== "string" || text.length <= TOOL_OUTPUT_PREVIEW)
    return e.data;
  return {
    ...e.data,
    text: `${text.slice(0, TOOL_OUTPUT_PREVIEW)}... (${text.length} characters; the whole text: scifi audit show ${runId} --call ${JSON.stringify(String(e.data?.callId ?? ""))})`,
  };
}
