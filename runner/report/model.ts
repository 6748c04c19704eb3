// The report's view of a run: the tape summary (the same data model `scifi audit show/stats` print)
// joined with the history tape, the checkpoint, the granted spec, the parsed SAM and memory.
// Totals come from `summarizeTape` only, so the terminal and the page cannot disagree.
import { existsSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { type CallSummary, summarizeTape, type TapeSummary } from "../audit/summary.ts";
import type {
  CallRecord,
  EventRecord,
  InjectedRecord,
  TapeContentBlock,
  TapeUsage,
  VerifyResult,
} from "../audit/types.ts";
import { parseEntries } from "../memory/entries.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import { readMemoryView } from "../memory/view.ts";
import { homePaths, runFiles } from "../paths.ts";
import type { SandboxSpec } from "../policy/spec.ts";
import type { ExpectationItem, SamNode } from "../sam/types.ts";
import { sha256 } from "../sha256.ts";
import { BUILTIN_SKILLS_DIR } from "../skills/library.ts";
import { type ChangesView, changesView } from "./changes-view.ts";
import { type RunInputs, sharedMemoryFiles } from "./load.ts";

export type PhaseName = "prescan" | "work" | "checks" | "review" | "final_review" | "other";

export interface ToolCallView {
  id: string;
  name: string;
  input: Record<string, unknown>;
  /** The result the agent sent back in its next call; absent when the pass ended with this call. */
  result?: { content: string; isError: boolean };
}

export interface CallView {
  summary: CallSummary;
  record: CallRecord;
  toolCalls: ToolCallView[];
  /** The call itself failed, or one of its tool calls returned an error. */
  failed: boolean;
  /** Memory and skill texts that entered this call's prompt (tape records just before it). */
  injected: InjectedRecord[];
  /** The earlier call of the same conversation whose request this one extends (for de-duplication). */
  previous?: { seq: number; sameSystem: boolean; sharedMessages: number; sameTools: boolean };
}

export interface CheckView {
  id: string;
  node: string;
  itemId?: string;
  command?: string;
  passed: boolean;
  exitCode: number;
  output?: string;
}

export interface VerdictItemView {
  id: string;
  text?: string;
  pass: boolean;
  evidence?: string;
}

export interface VerdictView {
  node: string;
  passed: boolean;
  checksPassed: boolean;
  items: VerdictItemView[];
  findings: string[];
  fixes: string[];
  blocked?: string;
}

export interface PhaseView {
  name: PhaseName;
  /** Role name for calls outside the loop's phases (helpers). */
  label: string;
  durationMs?: number;
  calls: CallView[];
  checks: CheckView[];
  verdicts: VerdictView[];
}

export interface IterationView {
  /** 0: records outside any iteration; -1: the final review. */
  iteration: number;
  label: string;
  phases: PhaseView[];
  /** History events of this iteration that are not phases (limits, tampering, direction changes). */
  notes: HistoryRecord[];
  usage: TapeUsage;
  costUsd: number;
}

export interface InjectedView {
  record: InjectedRecord;
  /** Anchor id in the page. */
  anchor: string;
  /** The exact text that was hashed, when it can still be found; otherwise why not. */
  text?: string;
  missing?: string;
  /** A group or global memory view: the ids of the entries it drew on (history `memory_view`). */
  entries?: string[];
}

export interface MemoryWrittenView {
  file: string;
  scope: string;
  id: string;
  title: string;
  meta: string;
  body: string;
}

export type RunStatusView =
  | "passed"
  | "failed"
  | "blocked"
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

/** One connection through the run's proxy (runner/memory/history-events.ts ConnectionRecord). */
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
  sam: { name: string; file?: string; sha256?: string };
  status: RunStatusView;
  reason: string;
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
  events: EventRecord[];
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
  return {
    runId,
    runDir: inputs.runDir,
    sam: samFacts(inputs),
    status,
    reason: outcome?.reason ?? unfinished?.reason ?? "",
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
    changes: changesView(inputs.snapshots),
    events: summary.events,
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
  return { name, ...(file ? { file } : {}), ...(hash ? { sha256: hash } : {}) };
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

// ---- calls --------------------------------------------------------------------------------------

function callViews(records: RunInputs["records"], summary: TapeSummary): CallView[] {
  const callRecords = records.filter((r): r is CallRecord => r.kind === "call");
  const results = toolResults(callRecords);
  const bySeq = new Map(summary.calls.map((c) => [c.seq, c]));
  const lastOfConversation = new Map<string, CallRecord>();
  let pendingInjected: InjectedRecord[] = [];
  const views: CallView[] = [];
  for (const record of records) {
    if (record.kind === "injected") pendingInjected.push(record);
    if (record.kind !== "call") continue;
    const summaryOfCall = bySeq.get(record.seq);
    if (!summaryOfCall) continue;
    const toolCalls = (record.response?.content ?? []).flatMap((b) =>
      b.type === "tool_use"
        ? [{ id: b.id, name: b.name, input: b.input, ...withResult(results.get(b.id)) }]
        : [],
    );
    const key = `${record.role}|${record.iteration ?? ""}`;
    const previous = lastOfConversation.get(key);
    lastOfConversation.set(key, record);
    views.push({
      summary: summaryOfCall,
      record,
      toolCalls,
      failed: Boolean(record.error) || toolCalls.some((t) => t.result?.isError),
      injected: pendingInjected.filter((i) => i.role === record.role),
      ...(previous ? { previous: overlap(previous, record) } : {}),
    });
    pendingInjected = [];
  }
  return views;
}

function withResult(result: ToolCallView["result"]): Pick<ToolCallView, "result"> {
  return result ? { result } : {};
}

/** toolUseId -> the tool_result block the agent sent back (found in later requests). */
function toolResults(calls: CallRecord[]): Map<string, { content: string; isError: boolean }> {
  const map = new Map<string, { content: string; isError: boolean }>();
  for (const call of calls)
    for (const message of call.request.messages)
      for (const block of message.content)
        if (block.type === "tool_result" && !map.has(block.toolUseId))
          map.set(block.toolUseId, { content: block.content, isError: block.isError === true });
  return map;
}

/** How much of `next`'s request repeats `prev`'s: the page shows only what is new. */
function overlap(prev: CallRecord, next: CallRecord): NonNullable<CallView["previous"]> {
  const a = prev.request.messages;
  const b = next.request.messages;
  let shared = 0;
  while (shared < a.length && shared < b.length && sameMessage(a[shared], b[shared])) shared++;
  return {
    seq: prev.seq,
    sameSystem: prev.request.system === next.request.system,
    sharedMessages: shared,
    sameTools: JSON.stringify(prev.request.tools ?? []) === JSON.stringify(next.request.tools ?? []),
  };
}

function sameMessage(
  x: { role: string; content: TapeContentBlock[] } | undefined,
  y: { role: string; content: TapeContentBlock[] } | undefined,
): boolean {
  if (x === undefined || y === undefined) return false;
  // The tape reader shares unchanged messages between calls: identity settles most comparisons.
  return x === y || (x.role === y.role && JSON.stringify(x) === JSON.stringify(y));
}

// ---- timeline -----------------------------------------------------------------------------------

const PHASE_OF_ROLE: Record<string, PhaseName> = {
  prescan: "prescan",
  work: "work",
  review: "review",
  final_review: "final_review",
};
const PHASE_ORDER: PhaseName[] = ["prescan", "work", "checks", "review", "other", "final_review"];

function buildTimeline(calls: CallView[], inputs: RunInputs): IterationView[] {
  const iterations = new Map<number, IterationView>();
  const get = (n: number): IterationView => {
    let view = iterations.get(n);
    if (!view) {
      view = emptyIteration(n);
      iterations.set(n, view);
    }
    return view;
  };
  for (const call of calls) {
    const phaseName = PHASE_OF_ROLE[call.summary.role] ?? "other";
    const n = phaseName === "final_review" ? -1 : (call.summary.iteration ?? 0);
    const iteration = get(n);
    phase(iteration, phaseName, call.summary.role).calls.push(call);
    addUsage(iteration, call.summary);
  }
  const nodes = samNodes(inputs.sam?.root);
  for (const event of inputs.history) addHistoryEvent(event, get, nodes, inputs);
  for (const view of iterations.values()) setDurations(view, inputs.history);
  for (const view of iterations.values())
    view.phases.sort((x, y) => PHASE_ORDER.indexOf(x.name) - PHASE_ORDER.indexOf(y.name));
  return [...iterations.values()].sort((x, y) => order(x.iteration) - order(y.iteration));
}

const order = (n: number): number => (n === -1 ? Number.MAX_SAFE_INTEGER : n);

function emptyIteration(n: number): IterationView {
  return {
    iteration: n,
    label: n === -1 ? "final review" : n === 0 ? "outside iterations" : `iteration ${n}`,
    phases: [],
    notes: [],
    usage: { input: 0, output: 0, cacheWrite: 0, cacheRead: 0, reasoning: 0 },
    costUsd: 0,
  };
}

function phase(view: IterationView, name: PhaseName, label: string = name): PhaseView {
  let found = view.phases.find((p) => p.name === name && p.label === label);
  if (!found) {
    found = { name, label, calls: [], checks: [], verdicts: [] };
    view.phases.push(found);
  }
  return found;
}

function addUsage(view: IterationView, call: CallSummary): void {
  for (const key of Object.keys(view.usage) as (keyof TapeUsage)[]) view.usage[key] += call.usage[key];
  view.costUsd += call.costUsd;
}

function addHistoryEvent(
  event: HistoryRecord,
  get: (n: number) => IterationView,
  nodes: Map<string, SamNode>,
  inputs: RunInputs,
): void {
  switch (event.type) {
    case "check": {
      const item = itemOfCheck(nodes.get(event.node), event.check);
      const last = inputs.state?.checks?.find((c) => c.id === event.check);
      const fromState = last && inputs.state?.iteration === event.iteration ? last : undefined;
      phase(get(event.iteration), "checks").checks.push({
        id: event.check,
        node: event.node,
        ...(item ? { itemId: item.id } : {}),
        ...(item?.checks.find((c) => c.id === event.check)
          ? { command: item.checks.find((c) => c.id === event.check)?.command }
          : {}),
        passed: event.passed,
        exitCode: event.exitCode,
        ...(event.output || fromState?.output || event.detail
          ? { output: event.output || fromState?.output || event.detail }
          : {}),
      });
      return;
    }
    case "verdict":
      phase(get(event.iteration), "review").verdicts.push(verdictView(event, nodes));
      return;
    case "limit":
    case "tampering":
    case "asset_cleanup":
    case "deliverable_links":
    case "direction_change":
    case "resumed":
    case "memory_view":
      get(event.iteration).notes.push(event);
      return;
    case "prescan":
      // Skills the pre-scan added beyond the SAM's list (site policy prescanAddsSkills).
      if (event.addedSkills?.length) get(event.iteration).notes.push(event);
      return;
    default:
      return;
  }
}

function samNodes(root: SamNode | undefined): Map<string, SamNode> {
  const map = new Map<string, SamNode>();
  const walk = (node: SamNode): void => {
    map.set(node.id, node);
    for (const child of node.children) walk(child);
  };
  if (root) walk(root);
  return map;
}

function itemOfCheck(node: SamNode | undefined, checkId: string): ExpectationItem | undefined {
  return node?.items.find((item) => item.checks.some((c) => c.id === checkId));
}

/** The whole verdict as the runner wrote it to the history (runner/loop/run.ts). */
function verdictView(
  event: Extract<HistoryRecord, { type: "verdict" }>,
  nodes: Map<string, SamNode>,
): VerdictView {
  const node = nodes.get(event.node);
  return {
    node: event.node,
    passed: event.passed,
    checksPassed: event.checksPassed,
    items: event.items.map((item) => {
      const text = node?.items.find((i) => i.id === item.id)?.text;
      return {
        id: item.id,
        pass: item.pass,
        ...(text ? { text } : {}),
        ...(item.evidence ? { evidence: item.evidence } : {}),
      };
    }),
    findings: event.findings ?? [],
    fixes: event.fixes ?? [],
    ...(event.blocked ? { blocked: event.blocked } : {}),
  };
}

/**
 * Phase times from the history tape's boundaries (iteration start, pre-scan, work end, last check,
 * verdict); a phase without boundaries (a run stopped mid-phase, helper calls) uses its calls' span.
 */
function setDurations(view: IterationView, history: HistoryRecord[]): void {
  const events = history.filter((e) => "iteration" in e && e.iteration === view.iteration);
  const at = (type: HistoryRecord["type"], last = false): number | undefined => {
    const found = last ? events.filter((e) => e.type === type).at(-1) : events.find((e) => e.type === type);
    return found ? Date.parse(found.time) : undefined;
  };
  const start = at("iteration_start");
  const prescan = at("prescan");
  const workEnd = at("work_end");
  const lastCheck = at("check", true);
  const verdict = at("verdict");
  const bounds: Partial<Record<PhaseName, [number | undefined, number | undefined]>> = {
    prescan: [start, prescan],
    work: [prescan, workEnd],
    checks: [workEnd, lastCheck],
    review: [lastCheck ?? workEnd, verdict],
  };
  if (view.iteration === -1) {
    const final = history.find((e) => e.type === "final_review");
    const before = final ? history[history.indexOf(final) - 1] : undefined;
    bounds.final_review = [before && Date.parse(before.time), final && Date.parse(final.time)];
  }
  for (const p of view.phases) {
    const [from, to] = bounds[p.name] ?? [undefined, undefined];
    p.durationMs = from !== undefined && to !== undefined ? Math.max(0, to - from) : callSpan(p.calls);
  }
}

function callSpan(calls: CallView[]): number | undefined {
  if (calls.length === 0) return undefined;
  const starts = calls.map((c) => Date.parse(c.summary.time) - c.summary.latencyMs);
  const ends = calls.map((c) => Date.parse(c.summary.time));
  return Math.max(...ends) - Math.min(...starts);
}

function phaseTimesOf(view: IterationView): Partial<Record<PhaseName, number>> {
  const times: Partial<Record<PhaseName, number>> = {};
  for (const p of view.phases)
    if (p.durationMs !== undefined) times[p.name] = (times[p.name] ?? 0) + p.durationMs;
  return times;
}

// ---- memory and skills --------------------------------------------------------------------------

function injectedViews(records: InjectedRecord[], inputs: RunInputs): InjectedView[] {
  return records.map((record) => {
    const anchor = `injected-${record.seq}`;
    const view = inputs.history.find(
      (e): e is Extract<HistoryRecord, { type: "memory_view" }> =>
        e.type === "memory_view" && e.ref === record.ref && e.sha256 === record.sha256,
    );
    if (view) return { record, anchor, ...memoryViewText(record, view, inputs), entries: view.entries };
    const found = injectedText(record, inputs);
    return { record, anchor, ...found };
  });
}

/**
 * A group or global memory view, built again from its file as it was then (the file is append-only:
 * entries written before the view was recorded) with the recorded budget. The hash decides.
 */
function memoryViewText(
  record: InjectedRecord,
  event: Extract<HistoryRecord, { type: "memory_view" }>,
  inputs: RunInputs,
): { text?: string; missing?: string } {
  const [file] = candidateFiles(record.ref, inputs);
  if (!file || !existsSync(file)) return { missing: `no file is known for '${record.ref}'` };
  const { text } = readMemoryView(file, { budgetTokens: event.budget, before: event.before ?? event.time });
  if (sha256(text) === record.sha256) return { text };
  return {
    missing: `the view built again from ${file} does not match sha256 ${record.sha256.slice(0, 12)}…: the file was changed since the run; entries: ${event.entries.join(", ")}`,
  };
}

/**
 * The text that was hashed into the prompt. Memory files are append-only, so the injected text is a
 * prefix of today's file ending at an entry boundary; a skill is its whole file. The hash decides.
 */
function injectedText(record: InjectedRecord, inputs: RunInputs): { text?: string; missing?: string } {
  const candidates = candidateFiles(record.ref, inputs);
  if (candidates.length === 0) return { missing: `no file is known for '${record.ref}'` };
  for (const file of candidates) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, "utf8");
    for (const prefix of entryPrefixes(text)) if (sha256(prefix) === record.sha256) return { text: prefix };
  }
  return {
    missing: `no text in ${candidates.join(" or ")} matches sha256 ${record.sha256.slice(0, 12)}…: the file was changed or removed since the run`,
  };
}

function candidateFiles(ref: string, inputs: RunInputs): string[] {
  const paths = homePaths(inputs.home);
  const [kind, scope, ...rest] = ref.split(":");
  const name = rest.join(":");
  if (kind === "skill" && scope)
    return [join(paths.skills, `${scope}.md`), join(BUILTIN_SKILLS_DIR, `${scope}.md`)];
  if (kind !== "memory") return [];
  if (scope === "task") return [runFiles(inputs.runDir).memory];
  if (scope === "group" && name) return [paths.groupMemory(name)];
  if (scope === "global") return [paths.globalMemory];
  return [];
}

/** The text cut before each entry mark, and the whole text. */
function entryPrefixes(text: string): string[] {
  const cuts = [...text.matchAll(/^<!-- scifi-entry /gm)].map((m) => m.index);
  return [...cuts.map((cut) => text.slice(0, cut)), text];
}

function memoryWritten(inputs: RunInputs, runId: string): MemoryWrittenView[] {
  const task = parseEntries(inputs.taskMemory).map((e) => ({
    file: runFiles(inputs.runDir).memory,
    scope: "task",
    ...e,
  }));
  const shared = sharedMemoryFiles(inputs.home).flatMap((file) =>
    parseEntries(readFileSync(file, "utf8"))
      .filter((e) => e.meta.includes(`run ${runId} `) || e.meta.endsWith(`run ${runId}`))
      .map((e) => ({ file, scope: scopeOf(file, inputs.home), ...e })),
  );
  return [...task, ...shared];
}

function scopeOf(file: string, home: string): string {
  if (file === homePaths(home).globalProposed) return "global (proposed: 'scifi memory accept' decides)";
  return file === homePaths(home).globalMemory
    ? "global"
    : `group ${file.replace(/^.*\//, "").replace(/\.md$/, "")}`;
}
