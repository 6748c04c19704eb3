// The integrity e2e table (docs/integrity.md), shared by Docker (test/run/integrity.e2e.test.ts) and
// Apptainer (test/sandbox/apptainer/integrity.inner.ts): ONE task (test/fixtures/integrity/task: a
// check asset, an allowlist, a host list through the run's proxy), one scripted agent per kind of
// attempt that is cheap to trigger, and what each run must show: exactly the integrity events of its
// kind (the tool call named where one made it, and marked on the audit tape), the honest control
// none; the report's header line and section (string level) and `scifi audit show`'s marks.
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { renderTranscript } from "../../runner/audit/render.ts";
import { summarizeTape } from "../../runner/audit/summary.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { readHistory } from "../../runner/memory/history.ts";
import type { HistoryRecord, IntegrityKind } from "../../runner/memory/history-events.ts";
import { renderReport } from "../../runner/report/html.ts";
import { loadRun } from "../../runner/report/load.ts";
import { buildReportModel } from "../../runner/report/model.ts";
import type { RunDeps, RunResult } from "../../runner/run/session/deps.ts";
import { runTask } from "../../runner/run/setup.ts";
import { workToolExchanges } from "./adversarial/workspace.ts";
import { REPO } from "./harness.ts";

export const FIXTURE = join(REPO, "test", "fixtures", "integrity");

export interface Row {
  agent: string;
  /** The kind every integrity event of the run has; undefined: the run has none. */
  kind?: IntegrityKind;
  /** The event names the work agent's tool call (else no call: found between phases, or the review). */
  fromCall: boolean;
  outcome: "passed" | "failed";
}

export const TABLE: Row[] = [
  { agent: "honest.yaml", fromCall: false, outcome: "passed" },
  { agent: "asset-write.yaml", kind: "asset_write", fromCall: true, outcome: "failed" },
  { agent: "rename-folder.yaml", kind: "asset_tampering", fromCall: false, outcome: "failed" },
  { agent: "allowlist.yaml", kind: "allowlist_refused", fromCall: true, outcome: "failed" },
  { agent: "network.yaml", kind: "network_refused", fromCall: true, outcome: "failed" },
  { agent: "review-pass.yaml", kind: "review_override", fromCall: false, outcome: "failed" },
];

/** One run of the task with the row's agent in a fresh folder under `root`, on `backend`. */
export async function runRow(
  root: string,
  row: Row,
  backend: { name: string } | { sandbox: RunDeps["backend"] },
): Promise<{ home: string; result: RunResult }> {
  const dir = join(root, row.agent.replace(/\W/g, "-"));
  const home = join(dir, "home");
  const taskDir = join(dir, "task");
  mkdirSync(home, { recursive: true });
  cpSync(join(FIXTURE, "task"), taskDir, { recursive: true });
  const site = join(home, "site-policy.yaml");
  writeFileSync(site, `allowedHosts: ["*.test:8000"]\n`);
  const result = await runTask({
    home,
    task: join(taskDir, "task.md"),
    sitePolicy: site,
    model: `scripted:${join(FIXTURE, "agents", row.agent)}`,
    limits: { walltimeSec: 200, bashTimeoutSec: 30 },
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    ...("sandbox" in backend ? { sandboxBackend: backend.sandbox } : { backend: backend.name }),
  });
  return { home, result };
}

/** What the row's run must show (see the top of this file). */
export function verifyRow(row: Row, home: string, result: RunResult): void {
  expect(result.outcome.status, result.outcome.reason).toBe(row.outcome);
  const history = readHistory(join(result.dir, "history.jsonl"));
  const events = history.filter(
    (e): e is Extract<HistoryRecord, { type: "integrity" }> => e.type === "integrity",
  );
  const html = renderReport(buildReportModel(loadRun(join(result.dir, "audit.jsonl"), home)));
  if (!row.kind) {
    expect(events).toEqual([]);
    expect(html).toMatch(/<th>Integrity<\/th><td id="fact-integrity">none<\/td>/);
    expect(html).not.toContain('id="integrity"');
    return;
  }
  const tools = () => JSON.stringify(workToolExchanges(join(result.dir, "audit.jsonl")));
  expect(events.length, tools()).toBeGreaterThan(0);
  expect(
    events.map((e) => e.kind),
    tools(),
  ).toEqual(events.map(() => row.kind));
  for (const e of events) {
    expect(e.rule.length).toBeGreaterThan(0);
    expect(e.action.length).toBeGreaterThan(0);
    expect(e.role).toBe(row.kind === "review_override" ? "review" : "work");
  }
  // The header counts them by kind and links the section, which lists each.
  expect(html).toContain(`<a href="#integrity"><b>${events.length} (${row.kind} ${events.length})</b></a>`);
  expect(html.match(/<tr class="integrity-event"/g)?.length).toBe(events.length);

  const tape = readTape(join(result.dir, "audit.jsonl"));
  const transcript = renderTranscript(summarizeTape(tape));
  const withCall = events.filter((e) => e.call);
  if (!row.fromCall) {
    expect(withCall).toEqual([]);
    expect(transcript).not.toContain("INTEGRITY");
    return;
  }
  expect(withCall.length).toBe(events.length);
  for (const e of withCall) {
    const call = e.call as NonNullable<typeof e.call>;
    // The call record at that sequence number is the work agent's, and its response made this call.
    const record = tape.find((r) => r.seq === call.seq);
    expect(record?.kind === "call" && record.role).toBe("work");
    const uses = record?.kind === "call" ? (record.response?.content ?? []) : [];
    expect(uses.some((b) => b.type === "tool_use" && b.id === call.id && b.name === call.tool)).toBe(true);
    expect(html).toContain(`href="#call-${call.seq}">#${call.seq} ${call.tool}</a>`);
    expect(transcript).toContain(`!! INTEGRITY ${row.kind}: tool ${call.tool} ${call.id}`);
  }
}
