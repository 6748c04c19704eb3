// Terminal rendering of a tape summary: `scifi audit show` (transcript) and `scifi audit stats`.
// Every tape string goes through terminal-text (shown, never obeyed); a preview that is cut says
// how much is left out and where the whole text is.
import { shellQuote, visible, visiblePreview } from "../terminal-text.ts";
import type { CallSummary, TapeSummary, Totals } from "./summary.ts";
import type { EventRecord } from "./types.ts";

const PREVIEW = 400;

export function renderTranscript(summary: TapeSummary): string {
  const lines: string[] = [
    `Audit tape of run ${summary.runId}: ${summary.records} records, ${summary.calls.length} calls`,
  ];
  const bySeq = new Map<number, string[]>();
  for (const item of summary.injected) {
    push(
      bySeq,
      item.seq,
      `#${item.seq} injected ${visible(item.source)} ${visible(item.ref)} (sha256 ${item.sha256.slice(0, 12)}) into ${item.role}`,
    );
  }
  for (const event of summary.events) push(bySeq, event.seq, renderEvent(event));
  const marks = integrityMarks(summary);
  for (const call of summary.calls)
    push(bySeq, call.seq, ...renderCall(call), ...(marks.get(call.seq) ?? []));
  for (const seq of [...bySeq.keys()].sort((a, b) => a - b)) lines.push("", ...(bySeq.get(seq) ?? []));
  lines.push("", renderTotals("Total", summary.totals));
  return lines.join("\n");
}

/**
 * The run's integrity events (runner/run/session/integrity.ts writes an `integrity` event naming the call)
 * as marks under the call whose tool call a defence refused, undid or overrode.
 */
function integrityMarks(summary: TapeSummary): Map<number, string[]> {
  const marks = new Map<number, string[]>();
  for (const event of summary.events) {
    if (event.event !== "integrity" || !event.data) continue;
    const { call, kind, tool, id } = event.data;
    if (typeof call !== "number") continue;
    push(
      marks,
      call,
      `   !! INTEGRITY ${visible(String(kind))}: tool ${visible(String(tool))} ${visible(String(id))} (event #${event.seq}; docs/integrity.md)`,
    );
  }
  return marks;
}

function renderEvent(event: EventRecord): string {
  const data = event.data;
  // A tool output recorded before its elision: a preview, as a call's result is shown.
  if (event.event === "tool_output" && typeof data?.text === "string") {
    const id = String(data.callId);
    return `#${event.seq} event tool_output ${visible(String(data.role))} ${visible(id)}: ${visiblePreview(data.text, PREVIEW, `the whole text: scifi audit show RUN --call ${shellQuote(id)}`)}`;
  }
  return `#${event.seq} event ${visible(event.event)}${data ? ` ${visible(JSON.stringify(data))}` : ""}`;
}

function renderCall(call: CallSummary): string[] {
  const where = [
    call.iteration !== undefined ? `iter ${call.iteration}` : "",
    call.step !== undefined ? `step ${call.step}` : "",
  ]
    .filter(Boolean)
    .join(" ");
  const u = call.usage;
  const out = [
    visible(
      `#${call.seq} ${call.time} ${call.role}${where ? ` (${where})` : ""} -> ${call.provider}/${call.model}`,
    ),
    `   tokens in ${u.input} + cache write ${u.cacheWrite} + cache read ${u.cacheRead}, out ${u.output}${u.reasoning ? ` (reasoning ${u.reasoning})` : ""} | $${call.costUsd.toFixed(4)} | ${call.latencyMs} ms${call.stopReason ? ` | ${call.stopReason}` : ""}`,
  ];
  for (const a of call.attempts) {
    out.push(
      `   ! ${a.outcome} after ${a.reason} on ${a.entry}${a.status ? ` (HTTP ${a.status})` : ""}${a.delayMs !== undefined ? `, waited ${a.delayMs} ms` : ""}: ${clip(a.error, 160)}`,
    );
  }
  for (const t of call.thinking) out.push(`   thinking: ${clip(t, PREVIEW)}`);
  if (call.text) out.push(`   text: ${clip(call.text, PREVIEW)}`);
  for (const t of call.toolCalls) {
    out.push(`   tool ${visible(t.name)} ${clip(JSON.stringify(t.input), PREVIEW)}`);
    // What the tool gave back, as the model saw it (the next request carried it).
    if (t.result) out.push(`   ${t.result.isError ? "error" : "result"}: ${clip(t.result.content, PREVIEW)}`);
  }
  if (call.json !== undefined) out.push(`   json: ${clip(JSON.stringify(call.json), PREVIEW)}`);
  if (call.error) out.push(`   ERROR ${call.error.name}: ${clip(call.error.message, PREVIEW)}`);
  return out;
}

export function renderStats(summary: TapeSummary): string {
  const lines = [
    `Run ${summary.runId}: ${summary.totals.calls} calls (${summary.totals.failedCalls} failed), wall time ${(summary.wallMs / 1000).toFixed(1)} s`,
    renderTotals("Total", summary.totals),
    "",
    "Per role:",
    ...Object.entries(summary.byRole).map(([role, t]) => renderTotals(`  ${role}`, t)),
    "",
    "Per model:",
    ...Object.entries(summary.byModel).map(([model, t]) => renderTotals(`  ${model}`, t)),
  ];
  return lines.join("\n");
}

function renderTotals(label: string, t: Totals): string {
  const u = t.usage;
  return `${label}: ${t.calls} calls | in ${u.input}, cache write ${u.cacheWrite}, cache read ${u.cacheRead}, out ${u.output}, reasoning ${u.reasoning} | cache-read share ${(t.cacheReadShare * 100).toFixed(1)} % | $${t.costUsd.toFixed(4)} | ${t.retries} retries, ${t.fallbacks} fallbacks | ${(t.latencyMs / 1000).toFixed(1)} s in calls`;
}

function push(map: Map<number, string[]>, seq: number, ...lines: string[]): void {
  map.set(seq, [...(map.get(seq) ?? []), ...lines]);
}

function clip(text: string, max: number): string {
  return visiblePreview(text, max, "the whole call: scifi audit show --json, or the tape");
}
