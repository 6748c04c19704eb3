// The report's view of a run: the tape summary (the same data model `scifi audit show/stats` print)
// joined with the history tape, the checkpoint, the granted spec, the parsed SAM and memory.
// Totals come from `summarizeTape` only, so the terminal and the page cannot disagree. The parts:
// calls.ts (each model call), timeline.ts (iterations and phases), injected.ts (memory and skills).

import { basename } from "node:path";
import { summarizeTape, type TapeSummary } from "../audit/summary.ts";
import type { EventRecord, TapeUsage, VerifyResult } from "../audit/types.ts";
import type { CritiqueRecord } from "../critique/schema.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import type { SandboxSpec } from "../policy/spec.ts";
import { type FailureFirst, failureFirst } from "../run-folder/failure.ts";
import { type CheckSummary, checkSummary } from "../sam/check-summary.ts";
import { callViews } from "./calls.ts";
import { type ChangesView, changesView } from "./changes-view.ts";
import { type InjectedView, injectedViews, type MemoryWrittenView, memoryWritten } from "./injected.ts";
import { type IntegrityView, integrityRows } from "./integrity.ts";
import type { RunInputs } from "./load.ts";
import { buildTimeline, type IterationView, type PhaseName, phaseTimesOf } from "./timeline.ts";

export type RunStatusView =
  | "passed"
  | "failed"
  | "blocked"
  /** A person cancelled it while it ran: an outcome, with its report. */
  | "cancelled"
  | "unfinished"
  /** A sandbox never started (the backend or its image was missing): the reason says why. */
  | "failed to start"
  /** The run stopped on an error before it had an outcome (error.json says which). */
  | "stopped"
  /** A helper call (make-task, make-skill, ask, oracle): no task ran. */
  | "helper";

const HELPER_RUN = /^(make-task|make-skill|ask|oracle)-\d{8}T\d{6}Z-[0-9a-f]+$/;

/** The helper of a helper run's folder name, or undefined for a task run. */
export function helperOf(runId: string): string | undefined {
  return HELPER_RUN.exec(runId)?.[1];
}

function unfinishedStatus(inputs: RunInputs, runId: string): { status: RunStatusView; reason: string } {
  const helper = inputs.state ? undefined : helperOf(runId);
  if (helper) return { status: "helper", reason: `a ${helper} helper call (no task ran)` };
  const error = inputs.runError;
  if (error?.kind === "start")
    return { status: "failed to start", reason: `the sandbox did not start: ${error.message}` };
  if (error?.kind === "replay") return { status: "stopped", reason: `the replay diverged: ${error.message}` };
  if (error) return { status: "stopped", reason: `stopped by an error: ${error.message}` };
  return {
    status: "unfinished",
    reason: "the run has no end record: it is still running, or it was stopped (see the last phase below)",
  };
}

/** One connection through the run's proxy (runner/network/proxy.ts ConnectionRecord). */
export interface NetworkRowView {
  time: string;
  sandbox: string;
  kind: string;
  host: string;
  port: number;
  allowed: boolean;
  rule: string;
  reason?: string;
  bytesOut: number;
  bytesIn: number;
}

/** One approval request of the run and what became of it (history `approval` events). */
export interface ApprovalRowView {
  id: string;
  action: string;
  summary: string;
  state: "requested" | "approved" | "denied" | "timed_out";
  requestedAt: string;
  /** The OS user who decided, when, and the note or reason. */
  who?: string;
  at?: string;
  note?: string;
}

export interface ReportModel {
  runId: string;
  runDir: string;
  sam: {
    name: string;
    file?: string;
    sha256?: string;
    /** Run and compare stages; the Expectation items no check covers (judged by the review alone). */
    checks?: CheckSummary;
  };
  status: RunStatusView;
  reason: string;
  /** The applied `scifi evolve` proposals the run ran under (state.json `evolve`). */
  evolve: { id: string; kind: string; title: string; at: string }[];
  /** The replies came from a scripted model (a demo or a test): said next to the status everywhere. */
  scripted: boolean;
  /** A run that did not pass: its last failed checks and review items, shown first in the header. */
  failure?: FailureFirst;
  iterations: number;
  wallMs: number;
  summary: TapeSummary;
  chain: VerifyResult;
  spec?: SandboxSpec;
  timeline: IterationView[];
  injected: InjectedView[];
  memoryWritten: MemoryWrittenView[];
  approvals: ApprovalRowView[];
  /** Every connection through the run's proxy (history `network` events), allowed or refused. */
  network: NetworkRowView[];
  /** What the run's defences refused, undid or overrode (history `integrity` events). */
  integrity: IntegrityView[];
  events: EventRecord[];
  /** The critiques of the run (docs/critique.md); empty when none ran. */
  critiques: { records: CritiqueRecord[]; problems: string[] };
  roles: string[];
  tools: string[];
  /** What the run changed in its task folder (snapshots at start, after each work pass, at the end). */
  changes: ChangesView;
  charts: {
    perIteration: { label: string; usage: TapeUsage; costUsd: number }[];
    cacheShare: { seq: number; share: number }[];
    phaseTimes: { label: string; byPhase: Partial<Record<PhaseName, number>> }[];
  };
}

export function buildReportModel(inputs: RunInputs): ReportModel {
  const summary = summarizeTape(inputs.records);
  const calls = callViews(inputs.records, summary);
  const injected = injectedViews(summary.injected, inputs);
  const timeline = buildTimeline(calls, inputs);
  const end = [...inputs.history].reverse().find((e) => e.type === "run_end");
  const outcome =
    inputs.state?.outcome ??
    (end?.type === "run_end" ? { status: end.outcome, reason: end.reason } : undefined);
  const runId = inputs.state?.runId ?? summary.runId;
  const unfinished = outcome ? undefined : unfinishedStatus(inputs, runId || basename(inputs.runDir));
  const status: RunStatusView = outcome?.status ?? unfinished?.status ?? "unfinished";
  const failure =
    status === "passed" ? undefined : failureFirst(inputs.history, inputs.sam?.root, inputs.runDir);
  return {
    runId,
    runDir: inputs.runDir,
    sam: samFacts(inputs),
    status,
    reason: outcome?.reason ?? unfinished?.reason ?? "",
    evolve: inputs.state?.evolve ?? [],
    scripted:
      inputs.state?.model?.startsWith("scripted") === true ||
      summary.calls.some((c) => c.provider === "scripted"),
    ...(failure ? { failure } : {}),
    iterations: inputs.state?.iteration ?? Math.max(0, ...timeline.map((i) => i.iteration)),
    wallMs: inputs.state?.spent.elapsedMs ?? historySpan(inputs.history) ?? summary.wallMs,
    summary,
    chain: inputs.chain,
    ...(inputs.spec ? { spec: inputs.spec } : {}),
    timeline,
    injected,
    memoryWritten: memoryWritten(inputs, summary.runId),
    approvals: approvalRows(inputs.history),
    network: networkRows(inputs.history),
    integrity: integrityRows(inputs.history),
    changes: changesView(inputs.snapshots),
    events: summary.events,
    critiques: inputs.critiques ?? { records: [], problems: [] },
    roles: [...new Set(summary.calls.map((c) => c.role))].sort(),
    tools: [...new Set(calls.flatMap((c) => c.toolCalls.map((t) => t.name)))].sort(),
    charts: {
      perIteration: timeline.map((i) => ({ label: i.label, usage: i.usage, costUsd: i.costUsd })),
      cacheShare: summary.calls.map((c) => ({ seq: c.seq, share: cacheShareOf(c.usage) })),
      phaseTimes: timeline.map((i) => ({ label: i.label, byPhase: phaseTimesOf(i) })),
    },
  };
}

export function networkRows(history: readonly HistoryRecord[]): NetworkRowView[] {
  const rows: NetworkRowView[] = [];
  for (const e of history) {
    if (e.type !== "network") continue;
    rows.push({
      time: e.time,
      sandbox: e.sandbox,
      kind: e.kind,
      host: e.host,
      port: e.port,
      allowed: e.allowed,
      rule: e.rule,
      ...(e.reason ? { reason: e.reason } : {}),
      bytesOut: e.bytesOut,
      bytesIn: e.bytesIn,
    });
  }
  return rows;
}

/** Each approval request with its last state: who decided, when, and the note (or the timeout). */
export function approvalRows(history: readonly HistoryRecord[]): ApprovalRowView[] {
  const rows = new Map<string, ApprovalRowView>();
  for (const event of history) {
    if (event.type !== "approval") continue;
    const row = rows.get(event.id) ?? {
      id: event.id,
      action: event.action,
      summary: event.summary,
      state: event.state,
      requestedAt: event.time,
    };
    row.state = event.state;
    if (event.state !== "requested") {
      if (event.who) row.who = event.who;
      row.at = event.at ?? event.time;
      if (event.note) row.note = event.note;
    }
    rows.set(event.id, row);
  }
  return [...rows.values()];
}

function samFacts(inputs: RunInputs): ReportModel["sam"] {
  const sam = inputs.sam;
  const name = sam?.metadata.name ?? sam?.root.title ?? inputs.state?.samFile ?? "(SAM not recorded)";
  const file = sam?.file ?? inputs.state?.samFile;
  const hash = inputs.state?.samSha256 ?? sam?.sha256;
  return {
    name,
    ...(file ? { file } : {}),
    ...(hash ? { sha256: hash } : {}),
    ...(sam ? { checks: checkSummary(sam.root) } : {}),
  };
}

function historySpan(history: HistoryRecord[]): number | undefined {
  const start = history.find((e) => e.type === "run_start");
  const end = history.find((e) => e.type === "run_end");
  return start && end ? Date.parse(end.time) - Date.parse(start.time) : undefined;
}

function cacheShareOf(u: TapeUsage): number {
  const inputSide = u.input + u.cacheWrite + u.cacheRead;
  return inputSide === 0 ? 0 : u.cacheRead / inputSide;
}
