// The report's timeline: the run's iterations, each with its phases (the model calls, checks and
// verdicts in it, and how long it took) and the history events that are not phases. The phases
// and their order are the run's own (runner/run-folder/state.ts PHASES), not a second model of them.
import type { CallSummary } from "../audit/summary.ts";
import type { TapeUsage } from "../audit/types.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import { readHeldOutput } from "../run-folder/check-evidence.ts";
import { PHASES, type Phase } from "../run-folder/state.ts";
import type { ExpectationItem, SamNode } from "../sam/types.ts";
import type { CallView } from "./calls.ts";
import type { RunInputs } from "./load.ts";

/** Checkpoint marks between phases: they take no time and hold no calls of their own. */
const MARK_LIST = ["created", "iteration_end", "ended"] as const satisfies readonly Phase[];
type Mark = (typeof MARK_LIST)[number];
const MARKS: ReadonlySet<Phase> = new Set(MARK_LIST);
type RunPhase = Exclude<Phase, Mark>;

/** A phase of the run, or `other`: calls of helpers outside the loop's phases. */
export type PhaseName = RunPhase | "other";

const RUN_PHASES: readonly RunPhase[] = PHASES.filter((p): p is RunPhase => !MARKS.has(p));

/** The run's order, with helper calls after an iteration's phases and before the final review. */
const PHASE_ORDER: readonly PhaseName[] = [
  ...RUN_PHASES.filter((p) => p !== "final_review"),
  "other",
  "final_review",
];

/** The loop's agents take their phase's name as their role (the tracer: the critique's); any other role is a helper's. */
function phaseOfRole(role: string): PhaseName {
  if (role === "tracer") return "critique";
  return RUN_PHASES.find((p) => p === role) ?? "other";
}

export interface CheckView {
  id: string;
  node: string;
  itemId?: string;
  command?: string;
  passed: boolean;
  exitCode: number;
  output?: string;
  /** A compare stage (its real exit code and output read back from `check-output/`, for people). */
  compare?: boolean;
  durationMs?: number;
  sandbox?: string;
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

export function buildTimeline(calls: CallView[], inputs: RunInputs): IterationView[] {
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
    const phaseName = phaseOfRole(call.summary.role);
    const n = phaseName === "final_review" ? -1 : (call.summary.iteration ?? 0);
    const iteration = get(n);
    // The tracer and the critique share one phase, named after it.
    phase(iteration, phaseName, phaseName === "critique" ? "critique" : call.summary.role).calls.push(call);
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
      const held = event.heldOutput ? readHeldOutput(inputs.runDir, event.heldOutput) : undefined;
      const durationMs = fromState?.durationMs;
      const sandbox = event.sandbox ?? fromState?.sandbox;
      phase(get(event.iteration), "checks").checks.push({
        id: event.check,
        node: event.node,
        ...(item ? { itemId: item.id } : {}),
        ...(item?.checks.find((c) => c.id === event.check)
          ? { command: item.checks.find((c) => c.id === event.check)?.command }
          : {}),
        passed: event.passed,
        exitCode: held?.exitCode ?? event.exitCode,
        ...(held
          ? { output: held.output }
          : event.output || fromState?.output || event.detail
            ? { output: event.output || fromState?.output || event.detail }
            : {}),
        ...(event.heldOutput ? { compare: true } : {}),
        ...(durationMs !== undefined ? { durationMs } : {}),
        ...(sandbox ? { sandbox } : {}),
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
    case "assets_changed":
    case "direction_change":
    case "resumed":
    case "control":
    case "memory_view":
    case "sandbox_died":
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

/** The whole verdict as the runner wrote it to the history (runner/run/phases/review.ts). */
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
    critique: [verdict, at("critique")],
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

export function phaseTimesOf(view: IterationView): Partial<Record<PhaseName, number>> {
  const times: Partial<Record<PhaseName, number>> = {};
  for (const p of view.phases)
    if (p.durationMs !== undefined) times[p.name] = (times[p.name] ?? 0) + p.durationMs;
  return times;
}
