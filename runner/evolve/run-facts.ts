// One run folder read into the facts `scifi evolve` counts: per work pass the model that did it and
// whether it passed, what the checks and the review said, tool results, spend per model and role,
// failing checks and review findings. Reads state.json, history.jsonl, the audit tape (through
// readTape, the one way to read one) and sam.json's name and group; writes nothing. Everything in
// here that came from a run (check output, findings, names) is hostile text: it is kept as it is
// and escaped where it is shown (render.ts).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CallRecord } from "../audit/types.ts";
import { readTape } from "../audit/verify.ts";
import { readHistory } from "../memory/history.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import { runFiles } from "../paths.ts";
import type { RunState } from "../run-folder/state.ts";

/** Spend of one model (models-config entry) at one rank in one role, within one run. */
export interface UsageFacts {
  entry: string;
  provider: string;
  model: string;
  rank: number;
  role: string;
  calls: number;
  failedCalls: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  usd: number;
}

/** One work pass (an iteration's work on one node) and how it was judged. */
export interface PassFacts {
  iteration: number;
  node: string;
  /** The entry that made most of the pass's work calls ("unknown" when the tape has none). */
  entry: string;
  rank: number;
  /** The review's verdict, checks included (the runner's `passed`). */
  passed: boolean;
  /** Whether the iteration ran any deterministic check on the node. */
  hadChecks: boolean;
  checksPassed: boolean;
  /** The review's own items all passed and it reported no blocker. */
  reviewSaidPass: boolean;
  /** The entry that made the review call of the iteration. */
  reviewEntry?: string;
  reviewRank?: number;
  blocked: boolean;
}

/** Tool results the work agent got back, per entry and rank of the call that asked for them. */
export interface ToolFacts {
  entry: string;
  rank: number;
  results: number;
  failures: number;
  /** Refused by the task's command allowlist (`Refused: ...` from the bash tool). */
  allowlistRejections: number;
  /** Refused by the runner's limits (`Rejected by the runner: ...`). */
  runnerRejections: number;
}

export interface FailingCheck {
  check: string;
  iteration: number;
  exitCode: number;
  timedOut: boolean;
  /** The output tail the history recorded. */
  output: string;
}

export interface RunFacts {
  runId: string;
  dir: string;
  task: string;
  group?: string;
  startedAt: string;
  /** `running` when the run has no outcome yet (it is counted nowhere but in the run list). */
  outcome: "passed" | "failed" | "blocked" | "cancelled" | "running";
  iterations: number;
  /** The run's model spec (state.json). */
  modelSpec?: string;
  /** Any call answered by the scripted model: the run is labelled scripted wherever it shows. */
  scripted: boolean;
  passes: PassFacts[];
  usage: UsageFacts[];
  tools: ToolFacts[];
  failingChecks: FailingCheck[];
  /** Review findings, in order. */
  findings: string[];
  /** Accepted evolve proposals the run ran under (state.json `evolve`, runs from before: none). */
  evolve: string[];
  /** Integrity events on the run's history (docs/integrity.md). */
  integrityEvents: number;
}

/** A folder is a run of the loop when it has a state.json (helper runs and others have none). */
export function isRunFolder(dir: string): boolean {
  return existsSync(runFiles(dir).state);
}

export function readRunFacts(dir: string): RunFacts {
  const files = runFiles(dir);
  const state = JSON.parse(readFileSync(files.state, "utf8")) as RunState & { evolve?: { id: string }[] };
  const history = readHistory(files.history);
  const tape = existsSync(files.audit) ? readTape(files.audit, { tolerant: true }) : [];
  const { task, group } = taskOf(dir, state);
  const start = history.find((h) => h.type === "run_start");
  const calls = tape.filter((r): r is CallRecord => r.kind === "call");
  return {
    runId: state.runId,
    dir,
    task,
    ...(group ? { group } : {}),
    startedAt: start?.time ?? "",
    outcome: state.outcome?.status ?? "running",
    iterations: state.iteration,
    ...(state.model ? { modelSpec: state.model } : {}),
    scripted: calls.some((c) => c.provider === "scripted"),
    passes: passesOf(history, calls),
    usage: usageOf(calls),
    tools: toolsOf(calls),
    failingChecks: history.flatMap((h) =>
      h.type === "check" && !h.passed
        ? [
            {
              check: h.check,
              iteration: h.iteration,
              exitCode: h.exitCode,
              timedOut: h.timedOut === true,
              output: h.output ?? h.detail ?? "",
            },
          ]
        : [],
    ),
    findings: history.flatMap((h) => (h.type === "verdict" ? (h.findings ?? []) : [])),
    evolve: (state.evolve ?? []).map((e) => e.id),
    integrityEvents: history.filter((h) => h.type === "integrity").length,
  };
}

function taskOf(dir: string, state: RunState): { task: string; group?: string } {
  const fallback = { task: state.samFile.split("/").slice(-2, -1)[0] ?? state.runId };
  const samJson = join(dir, "sam.json");
  if (!existsSync(samJson)) return fallback;
  try {
    const sam = JSON.parse(readFileSync(samJson, "utf8")) as { metadata?: { name?: string; group?: string } };
    const task = sam.metadata?.name ?? fallback.task;
    return sam.metadata?.group ? { task, group: sam.metadata.group } : { task };
  } catch {
    return fallback;
  }
}

function passesOf(history: HistoryRecord[], calls: CallRecord[]): PassFacts[] {
  const byIteration = new Map<number, CallRecord[]>();
  for (const call of calls) {
    if (call.iteration === undefined) continue;
    const list = byIteration.get(call.iteration) ?? [];
    list.push(call);
    byIteration.set(call.iteration, list);
  }
  const checks = new Map<string, number>();
  const blockedWork = new Set<number>();
  for (const h of history) {
    if (h.type === "check")
      checks.set(`${h.iteration}\0${h.node}`, (checks.get(`${h.iteration}\0${h.node}`) ?? 0) + 1);
    // The runner writes `blocker` (runner/run/session/conversation.ts); `blocked` kept for older records.
    if (h.type === "work_end" && (h.exit === "blocker" || h.exit === "blocked")) blockedWork.add(h.iteration);
  }
  const verdictOf = new Set<number>();
  for (const h of history) if (h.type === "verdict") verdictOf.add(h.iteration);
  const out: PassFacts[] = [];
  for (const h of history) {
    if (h.type === "work_end" && blockedWork.has(h.iteration) && !verdictOf.has(h.iteration)) {
      // A pass that ended on a blocker gets no review, so no verdict: it is a failed, blocked pass.
      const work = majority((byIteration.get(h.iteration) ?? []).filter((c) => c.role === "work"));
      out.push({
        iteration: h.iteration,
        node: h.node,
        entry: work?.entry ?? "unknown",
        rank: work?.request.rank ?? 0,
        passed: false,
        hadChecks: false,
        checksPassed: false,
        reviewSaidPass: false,
        blocked: true,
      });
      continue;
    }
    if (h.type !== "verdict") continue;
    const iterationCalls = byIteration.get(h.iteration) ?? [];
    const work = majority(iterationCalls.filter((c) => c.role === "work"));
    const review = majority(iterationCalls.filter((c) => c.role === "review"));
    const blocked = h.blocked !== undefined || blockedWork.has(h.iteration);
    out.push({
      iteration: h.iteration,
      node: h.node,
      entry: work?.entry ?? "unknown",
      rank: work?.request.rank ?? 0,
      passed: h.passed,
      hadChecks: (checks.get(`${h.iteration}\0${h.node}`) ?? 0) > 0,
      checksPassed: h.checksPassed,
      reviewSaidPass: h.items.every((i) => i.pass) && h.blocked === undefined,
      ...(review ? { reviewEntry: review.entry, reviewRank: review.request.rank } : {}),
      blocked,
    });
  }
  return out;
}

/** The call of the entry (and rank) that made most of these calls; the first such on a tie. */
function majority(calls: CallRecord[]): CallRecord | undefined {
  const counts = new Map<string, { call: CallRecord; n: number }>();
  for (const call of calls) {
    const key = `${call.entry}\0${call.request.rank}`;
    const seen = counts.get(key);
    if (seen) seen.n++;
    else counts.set(key, { call, n: 1 });
  }
  let best: { call: CallRecord; n: number } | undefined;
  for (const candidate of counts.values()) if (!best || candidate.n > best.n) best = candidate;
  return best?.call;
}

function usageOf(calls: CallRecord[]): UsageFacts[] {
  const map = new Map<string, UsageFacts>();
  for (const call of calls) {
    const key = `${call.entry}\0${call.request.rank}\0${call.role}`;
    let u = map.get(key);
    if (!u) {
      u = {
        entry: call.entry,
        provider: call.provider,
        model: call.model,
        rank: call.request.rank,
        role: call.role,
        calls: 0,
        failedCalls: 0,
        input: 0,
        output: 0,
        cacheRead: 0,
        cacheWrite: 0,
        usd: 0,
      };
      map.set(key, u);
    }
    u.calls++;
    if (call.error) u.failedCalls++;
    u.input += call.usage.input;
    u.output += call.usage.output;
    u.cacheRead += call.usage.cacheRead;
    u.cacheWrite += call.usage.cacheWrite;
    u.usd += call.costUsd;
  }
  return [...map.values()];
}

const ALLOWLIST_REFUSAL = "Refused: ";
const RUNNER_REJECTION = "Rejected by the runner: ";

/**
 * Tool results come back in the next work call's request, as the last message. Each is counted
 * once (by its tool-use id) and charged to the call whose reply asked for it. The results of a
 * pass's last step are not on the tape (no call follows them): they are not counted.
 */
function toolsOf(calls: CallRecord[]): ToolFacts[] {
  const askedBy = new Map<string, CallRecord>();
  const seen = new Set<string>();
  const map = new Map<string, ToolFacts>();
  for (const call of calls) {
    if (call.role !== "work") continue;
    const last = call.request.messages[call.request.messages.length - 1];
    if (last?.role === "user") {
      for (const block of last.content) {
        if (block.type !== "tool_result" || seen.has(block.toolUseId)) continue;
        seen.add(block.toolUseId);
        const asker = askedBy.get(block.toolUseId) ?? call;
        const key = `${asker.entry}\0${asker.request.rank}`;
        let t = map.get(key);
        if (!t) {
          t = {
            entry: asker.entry,
            rank: asker.request.rank,
            results: 0,
            failures: 0,
            allowlistRejections: 0,
            runnerRejections: 0,
          };
          map.set(key, t);
        }
        t.results++;
        if (block.isError) t.failures++;
        if (block.content.startsWith(ALLOWLIST_REFUSAL)) t.allowlistRejections++;
        if (block.content.startsWith(RUNNER_REJECTION)) t.runnerRejections++;
      }
    }
    for (const block of call.response?.content ?? [])
      if (block.type === "tool_use") askedBy.set(block.id, call);
  }
  return [...map.values()];
}
