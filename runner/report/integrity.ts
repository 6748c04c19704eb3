// The report's integrity records (docs/integrity.md): what the run's defences refused, undid or
// overrode, from the history's `integrity` events. The header counts them by kind; the section lists
// each with a link to the tool call on the timeline (`#call-<seq>`), which carries a badge.
import type { HistoryRecord, IntegrityCall } from "../memory/history-events.ts";
import { type Html, html, raw } from "./escape.ts";

export interface IntegrityView {
  time: string;
  iteration: number;
  kind: string;
  role: string;
  call?: IntegrityCall;
  attempted: string;
  rule: string;
  action: string;
}

export function integrityRows(history: readonly HistoryRecord[]): IntegrityView[] {
  const rows: IntegrityView[] = [];
  for (const e of history) {
    if (e.type !== "integrity") continue;
    rows.push({
      time: e.time,
      iteration: e.iteration,
      kind: e.kind,
      role: e.role,
      ...(e.call ? { call: e.call } : {}),
      attempted: e.attempted,
      rule: e.rule,
      action: e.action,
    });
  }
  return rows;
}

/** Events per kind, most frequent first (ties by name). */
export function integrityByKind(rows: readonly IntegrityView[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.kind, (counts.get(r.kind) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** The header's "Integrity" line: "none", or the count and the count by kind. */
export function integrityLine(rows: readonly IntegrityView[]): string {
  if (rows.length === 0) return "none";
  return `${rows.length} (${integrityByKind(rows)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ")})`;
}

/** Tape sequence numbers of the calls an integrity event names (their timeline entry gets a badge). */
export function integrityCalls(rows: readonly IntegrityView[]): Set<number> {
  return new Set(rows.flatMap((r) => (r.call ? [r.call.seq] : [])));
}

export function integrityFact(rows: readonly IntegrityView[]): Html {
  const line = integrityLine(rows);
  return html`<tr><th>Integrity</th><td id="fact-integrity">${rows.length > 0 ? html`<a href="#integrity"><b>${line}</b></a>` : line}</td></tr>`;
}

export function integritySection(rows: readonly IntegrityView[]): Html {
  if (rows.length === 0) return raw("");
  return html`<h2 id="integrity">Integrity: what the runner refused, undid or overrode</h2><table class="integrity"><tr><th>time</th><th>iter</th><th>kind</th><th>by</th><th>attempted</th><th>rule</th><th>the runner</th></tr>${rows.map(
    (r) =>
      html`<tr class="integrity-event" data-kind="${r.kind}"><td>${r.time}</td><td>${r.iteration}</td><td><b>${r.kind}</b></td><td>${r.role}${r.call ? html` <a class="integrity-call" href="#call-${r.call.seq}">#${r.call.seq} ${r.call.tool}</a>` : ""}</td><td>${r.attempted}</td><td>${r.rule}</td><td>${r.action}</td></tr>`,
  )}</table>`;
}
