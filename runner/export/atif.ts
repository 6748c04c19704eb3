// A run as an ATIF v1.7 trajectory (Harbor's Agent Trajectory Interchange Format; field mapping:
// docs/export.md, schema the tests validate against: atif.schema.json). The SAM's node tree is the
// trajectory tree: the run is the root node's trajectory; each sub-SAM is a subagent trajectory of
// its parent node; each agent pass (role and iteration: pre-scan, work, review, final review) is a
// subagent trajectory of the node it worked on, with one agent step per taped call, its tool
// results as the observation, and the tape hash of the call in the step's `extra`. The runner's
// deterministic checks and the review's verdicts are system steps of the node (no model call).
//
// Streaming: the tape is read once (tape-stream.ts); each pass's steps are written, guarded, to a
// spool file as they are made; only the node-level steps (a few per iteration) stay in memory.
// The document is assembled from the spools once the whole tape verified. (Over 500 lines: the
// pass writer and the node writer share one Pass model and its write order; kept in one file.)
import type { CallRecord, TapeContentBlock } from "../audit/types.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import { isCompareStage } from "../sam/check-blocks.ts";
import type { SamNode } from "../sam/types.ts";
import type { ExportGuard } from "./guard.ts";
import type { Out, Spool, SpoolPart } from "./sink.ts";
import { checksById, type ExportRun } from "./source.ts";
import { readVerified, type TapedCall } from "./tape-stream.ts";

export const ATIF_VERSION = "ATIF-v1.7";
const AGENT_NAME = "scifi";

interface Totals {
  prompt: number;
  completion: number;
  cached: number;
  cost: number;
}

/** One agent pass: a role's calls on one node in one iteration. */
interface Pass {
  id: string;
  node: string;
  role: string;
  iteration: number | undefined;
  firstTime: string;
  models: Set<string>;
  tools: CallRecord["request"]["tools"];
  /** Where its steps go: a spool part, or the output itself when passes are written as they end. */
  spool: SpoolPart | Out;
  steps: number;
  /** Its spool is complete and closed (a later iteration began). */
  closed: boolean;
  /** Messages of the current conversation already turned into steps (the response counts). */
  seen: number;
  system: string | undefined;
  /** The last agent step, waiting for its tool results in the next call's request. */
  pending: Record<string, unknown> | undefined;
  totals: Totals;
}

export interface AtifOptions {
  /** Only passes of these roles (all when empty). */
  roles?: string[];
  version: string;
  key?: Buffer;
}

/** Writes `run` as one trajectory (one line of JSON) to `out`. */
export async function writeAtif(
  run: ExportRun,
  guard: ExportGuard,
  spool: Spool,
  out: Out,
  options: AtifOptions,
): Promise<{ calls: number; steps: number }> {
  const passes = new Map<string, Pass>();
  const integrity = integrityByCall(run.history);
  let calls = 0;
  // A run of one SAM node: its passes follow each other in time and sit side by side in the root
  // trajectory, so each is written to the output as it ends (its `agent` after its steps, object
  // keys being unordered) and no spool is needed. With sub-SAMs, passes nest by node: spooled.
  const direct = (run.sam?.root.children.length ?? 0) === 0;
  let open: Pass | undefined;
  if (direct) {
    const head = JSON.stringify({
      schema_version: ATIF_VERSION,
      session_id: run.runId,
      trajectory_id: `${run.runId}/root`,
    });
    out.write(guard.json(`${head.slice(0, -1)},"subagent_trajectories":[`, `trajectory ${run.runId}/root`));
  }
  const onCall = (call: TapedCall) => {
    const role = call.record.role;
    if (options.roles && options.roles.length > 0 && !options.roles.includes(role)) return;
    calls++;
    const base = `${call.node}/${role}/it${call.record.iteration ?? 0}`;
    let key = base;
    // A pass that comes back after another began (written already when direct): a new segment.
    for (let n = 2; passes.get(key)?.closed; n++) key = `${base}#${n}`;
    let pass = passes.get(key);
    if (!pass) {
      if (direct && open) {
        finish(open, guard);
        writePassTail(out, run, guard, options, open);
      } else if (!direct) {
        // A new iteration's first pass: the earlier iterations' passes are complete, so their
        // spool parts are flushed (memory stays flat in the number of iterations).
        const iteration = call.record.iteration ?? 0;
        for (const done of passes.values())
          if (!done.closed && (done.iteration ?? 0) < iteration) finish(done, guard);
      }
      pass = {
        id: `${run.runId}/${key}`,
        node: call.node,
        role,
        iteration: call.record.iteration,
        firstTime: startOf(call.record),
        models: new Set(),
        tools: call.record.request.tools,
        spool: direct ? out : spool.part(),
        steps: 0,
        closed: false,
        seen: 0,
        system: undefined,
        pending: undefined,
        totals: { prompt: 0, completion: 0, cached: 0, cost: 0 },
      };
      if (direct) {
        if (open) out.write(",");
        writePassHead(out, run, guard, pass);
        open = pass;
      }
      passes.set(key, pass);
    }
    addCall(pass, call, guard, integrity);
  };
  await readVerified(run, {
    onCall,
    ...(options.key ? { key: options.key } : {}),
  });
  if (direct && open) {
    finish(open, guard);
    writePassTail(out, run, guard, options, open);
  }
  for (const pass of passes.values()) if (!pass.closed) finish(pass, guard);
  const steps = [...passes.values()].reduce((n, p) => n + p.steps, 0);
  const root = run.sam?.root;
  writeNode(out, run, guard, options, root, "root", passes, direct);
  out.write("\n");
  return { calls, steps };
}

function startOf(record: CallRecord): string {
  const end = Date.parse(record.time);
  return Number.isNaN(end) ? record.time : new Date(end - record.latencyMs).toISOString();
}

/** The run's integrity events that name a tool call, by the tape seq of the call that made it. */
function integrityByCall(history: HistoryRecord[]): Map<number, Record<string, unknown>[]> {
  const out = new Map<number, Record<string, unknown>[]>();
  for (const e of history) {
    if (e.type !== "integrity" || !e.call) continue;
    const { kind, attempted, rule, action } = e;
    out.set(e.call.seq, [
      ...(out.get(e.call.seq) ?? []),
      { kind, tool_call_id: e.call.id, attempted, rule, action },
    ]);
  }
  return out;
}

function addCall(
  pass: Pass,
  call: TapedCall,
  guard: ExportGuard,
  integrity: Map<number, Record<string, unknown>[]>,
): void {
  const record = call.record;
  const messages = record.request.messages;
  const continues =
    pass.seen > 0 && messages.length >= pass.seen && messages[pass.seen - 1]?.role === "assistant";
  if (!continues) {
    flushPending(pass, guard);
    pass.seen = 0;
  }
  let start: string | undefined;
  const at = () => {
    start ??= startOf(record);
    return start;
  };
  if (record.request.system !== pass.system) {
    pass.system = record.request.system;
    emit(pass, guard, { source: "system", timestamp: at(), message: record.request.system });
  }
  for (const message of messages.slice(pass.seen)) {
    if (message.role === "assistant") continue; // a response already written as an agent step
    const results = message.content.filter((b) => b.type === "tool_result");
    if (results.length > 0 && pass.pending) {
      pass.pending.observation = {
        results: results.map((b) => ({ source_call_id: b.toolUseId, content: b.content })),
      };
      const errors = results.filter((b) => b.isError).map((b) => b.toolUseId);
      if (errors.length > 0) (pass.pending.extra as Record<string, unknown>).tool_errors = errors;
    }
    flushPending(pass, guard);
    const text = textOf(message.content);
    if (text !== "") emit(pass, guard, { source: "user", timestamp: at(), message: text });
  }
  flushPending(pass, guard);
  pass.models.add(record.model);
  const usage = record.usage;
  const metrics = {
    prompt_tokens: usage.input + usage.cacheRead + usage.cacheWrite,
    completion_tokens: usage.output,
    cached_tokens: usage.cacheRead,
    cost_usd: record.costUsd,
    extra: { cache_write_tokens: usage.cacheWrite, reasoning_tokens: usage.reasoning },
  };
  pass.totals.prompt += metrics.prompt_tokens;
  pass.totals.completion += usage.output;
  pass.totals.cached += usage.cacheRead;
  pass.totals.cost += record.costUsd;
  const content = record.response?.content ?? [];
  const reasoning = content
    .filter((b) => b.type === "thinking")
    .map((b) => (b as { thinking: string }).thinking)
    .join("\n");
  const toolCalls = content
    .filter((b) => b.type === "tool_use")
    .map((b) => {
      const use = b as Extract<TapeContentBlock, { type: "tool_use" }>;
      return { tool_call_id: use.id, function_name: use.name, arguments: use.input };
    });
  const step: Record<string, unknown> = {
    source: "agent",
    timestamp: record.time,
    model_name: record.model,
    message: textOf(content),
    ...(reasoning !== "" ? { reasoning_content: reasoning } : {}),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    metrics,
    extra: {
      tape: {
        seq: record.seq,
        hash: (record as CallRecord & { hash?: string }).hash,
        line_sha256: call.lineHash,
      },
      provider: record.provider,
      entry: record.entry,
      latency_ms: record.latencyMs,
      ...(record.response ? { stop_reason: record.response.stopReason } : {}),
      ...(record.response?.json !== undefined ? { json: record.response.json } : {}),
      ...(record.attempts.length > 0 ? { failed_attempts: record.attempts.length } : {}),
      ...(record.error ? { error: record.error } : {}),
      ...(record.step !== undefined ? { scifi_step: record.step } : {}),
      // What a defence refused, undid or overrode of this step's tool calls (docs/integrity.md).
      ...(integrity.has(record.seq) ? { integrity: integrity.get(record.seq) } : {}),
    },
  };
  pass.pending = step;
  pass.seen = messages.length + 1;
}

function finish(pass: Pass, guard: ExportGuard): void {
  flushPending(pass, guard);
  pass.spool.flush();
  pass.closed = true;
}

function flushPending(pass: Pass, guard: ExportGuard): void {
  if (!pass.pending) return;
  const step = pass.pending;
  pass.pending = undefined;
  emit(pass, guard, step);
}

function emit(pass: Pass, guard: ExportGuard, step: Record<string, unknown>): void {
  pass.steps++;
  const text = JSON.stringify({ step_id: pass.steps, ...step });
  pass.spool.write(
    `${pass.steps > 1 ? "," : ""}${guard.json(text, `trajectory ${pass.id} step ${pass.steps}`)}`,
  );
}

function textOf(content: TapeContentBlock[]): string {
  let out: string | undefined;
  for (const b of content) if (b.type === "text") out = out === undefined ? b.text : `${out}\n${b.text}`;
  return out ?? "";
}

function toolDefinitions(tools: Pass["tools"]) {
  return (tools ?? []).map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.inputSchema },
  }));
}

/** One node's trajectory: its own steps (delegations, checks, verdicts), then its passes and children. */
function writeNode(
  out: Out,
  run: ExportRun,
  guard: ExportGuard,
  options: AtifOptions,
  node: SamNode | undefined,
  id: string,
  passes: Map<string, Pass>,
  /** The head and the passes were written already (writeAtif's direct mode). */
  direct = false,
): Totals {
  const mine = [...passes.values()].filter((p) => p.node === id);
  const children = node?.children ?? [];
  const events = run.history.filter((e) => "node" in e && e.node === id);
  const where = `trajectory ${run.runId}/${id}`;
  const steps: Record<string, unknown>[] = [];
  const at = (time: string) => time;
  steps.push({
    source: "system",
    timestamp: run.history.find((e) => e.type === "run_start")?.time ?? run.startedAt,
    message: node
      ? `${node.title}\n\nTo-do:\n${node.todo}\n\nExpectation:\n${node.expectation}`
      : `run ${run.runId} (no sam.json: the SAM text is not in the export)`,
    extra: { node: id },
  });
  type Timed = { time: string; step: Record<string, unknown> };
  const timed: Timed[] = [];
  for (const pass of mine)
    timed.push({
      time: pass.firstTime,
      step: {
        source: "system",
        timestamp: at(pass.firstTime),
        message: `${pass.role} agent${pass.iteration !== undefined ? `, iteration ${pass.iteration}` : ""}`,
        observation: {
          results: [{ subagent_trajectory_ref: [{ trajectory_id: pass.id, session_id: run.runId }] }],
        },
        extra: { role: pass.role, ...(pass.iteration !== undefined ? { iteration: pass.iteration } : {}) },
      },
    });
  const checks = checksById(run.sam);
  for (const event of events) {
    if (event.type === "check") {
      const check = checks.get(event.check);
      const hidden = check !== undefined && isCompareStage(check);
      const output = event.output ?? event.detail ?? "";
      timed.push({
        time: event.time,
        step: {
          source: "system",
          timestamp: event.time,
          message: `check ${event.check}: ${event.passed ? "passed" : "failed"} (exit ${event.exitCode}${event.timedOut ? ", timed out" : ""})`,
          observation: {
            results: [{ content: hidden ? "[compare stage: its output is not exported]" : output }],
          },
          extra: {
            check: event.check,
            passed: event.passed,
            exit_code: event.exitCode,
            iteration: event.iteration,
            stage: hidden ? "compare" : "run",
            ...(check ? { command: check.command } : {}),
          },
        },
      });
    } else if (event.type === "verdict") {
      timed.push({
        time: event.time,
        step: {
          source: "system",
          timestamp: event.time,
          message: `verdict on ${event.node}: ${event.passed ? "PASS" : "FAIL"}${event.blocked ? ` (blocked: ${event.blocked})` : ""}`,
          extra: {
            iteration: event.iteration,
            passed: event.passed,
            checks_passed: event.checksPassed,
            items: event.items,
            ...(event.findings ? { findings: event.findings } : {}),
          },
        },
      });
    }
  }
  for (const child of children) {
    const first = firstTime(child, passes, run.history);
    timed.push({
      time: first,
      step: {
        source: "system",
        timestamp: first,
        message: `sub-SAM ${child.id}: ${child.title}`,
        observation: {
          results: [
            {
              subagent_trajectory_ref: [{ trajectory_id: `${run.runId}/${child.id}`, session_id: run.runId }],
            },
          ],
        },
        extra: { node: child.id },
      },
    });
  }
  timed.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  steps.push(...timed.map((t) => t.step));
  if (id === "root") {
    const end = run.history.find((e) => e.type === "run_end");
    if (end)
      steps.push({
        source: "system",
        timestamp: end.time,
        message: `run ended ${end.outcome}: ${end.reason}`,
        extra: { outcome: end.outcome },
      });
  }
  const totals: Totals = { prompt: 0, completion: 0, cached: 0, cost: 0 };
  const head = {
    schema_version: ATIF_VERSION,
    session_id: run.runId,
    trajectory_id: `${run.runId}/${id}`,
    agent: {
      name: AGENT_NAME,
      version: options.version,
      ...(run.modelSpec ? { model_name: modelLabel(run) } : {}),
      extra: { scripted: run.scripted },
    },
  };
  if (direct) out.write(guard.json(`],"agent":${JSON.stringify(head.agent)},"steps":[`, where));
  else {
    const headText = JSON.stringify(head);
    out.write(guard.json(`${headText.slice(0, -1)},"steps":[`, where));
  }
  out.write(
    steps
      .map((s, i) => {
        // A run folder without the events that time a step (an old or partial run): no timestamp.
        const { timestamp, ...rest } = s;
        const step = { step_id: i + 1, ...(timestamp ? { timestamp } : {}), ...rest };
        return guard.json(JSON.stringify(step), `${where} step ${i + 1}`);
      })
      .join(","),
  );
  let first = true;
  if (direct) for (const pass of mine) add(totals, pass.totals);
  else {
    out.write(`],"subagent_trajectories":[`);
    for (const pass of mine) {
      if (!first) out.write(",");
      first = false;
      writePass(out, run, guard, options, pass);
      add(totals, pass.totals);
    }
  }
  for (const child of children) {
    if (!first) out.write(",");
    first = false;
    add(totals, writeNode(out, run, guard, options, child, child.id, passes));
  }
  out.write("],");
  const tail = {
    final_metrics: finalMetrics(totals, steps.length),
    extra: {
      node: id,
      ...(id === "root"
        ? {
            verdict: run.verdict,
            reason: run.reason,
            task: run.task,
            scripted: run.scripted,
            integrity: integrityCounts(run.history),
            ...(run.trial
              ? {
                  eval: {
                    id: run.trial.evalId,
                    trial: run.trial.trialId,
                    variant: run.trial.variant,
                    repeat: run.trial.repeat,
                  },
                }
              : {}),
          }
        : {}),
      metrics_include_subagents: true,
    },
  };
  out.write(guard.json(JSON.stringify(tail).slice(1), where));
  return totals;
}

function passAgent(run: ExportRun, options: AtifOptions, pass: Pass) {
  return {
    name: `${AGENT_NAME}-${pass.role}`,
    version: options.version,
    model_name: [...pass.models].join(", "),
    tool_definitions: toolDefinitions(pass.tools),
    extra: { scripted: run.scripted },
  };
}

function passTail(pass: Pass) {
  return {
    final_metrics: finalMetrics(pass.totals, pass.steps),
    extra: {
      node: pass.node,
      role: pass.role,
      ...(pass.iteration !== undefined ? { iteration: pass.iteration } : {}),
    },
  };
}

/** A spooled pass, whole: head, its steps from the spool, tail. */
function writePass(out: Out, run: ExportRun, guard: ExportGuard, options: AtifOptions, pass: Pass): void {
  const head = {
    schema_version: ATIF_VERSION,
    session_id: run.runId,
    trajectory_id: pass.id,
    agent: passAgent(run, options, pass),
  };
  const where = `trajectory ${pass.id}`;
  const headText = JSON.stringify(head);
  out.write(guard.json(`${headText.slice(0, -1)},"steps":[`, where));
  (pass.spool as SpoolPart).copyTo(out);
  out.write(`],${guard.json(JSON.stringify(passTail(pass)).slice(1), where)}`);
}

/** A pass written as it happens: its head before its first step... */
function writePassHead(out: Out, run: ExportRun, guard: ExportGuard, pass: Pass): void {
  const head = JSON.stringify({
    schema_version: ATIF_VERSION,
    session_id: run.runId,
    trajectory_id: pass.id,
  });
  out.write(guard.json(`${head.slice(0, -1)},"steps":[`, `trajectory ${pass.id}`));
}

/** ...and its agent (the models that answered are known only now) and totals after its last. */
function writePassTail(out: Out, run: ExportRun, guard: ExportGuard, options: AtifOptions, pass: Pass): void {
  const tail = { agent: passAgent(run, options, pass), ...passTail(pass) };
  out.write(`],${guard.json(JSON.stringify(tail).slice(1), `trajectory ${pass.id}`)}`);
}

function finalMetrics(t: Totals, steps: number) {
  return {
    total_prompt_tokens: t.prompt,
    total_completion_tokens: t.completion,
    total_cached_tokens: t.cached,
    total_cost_usd: Math.round(t.cost * 1e9) / 1e9,
    total_steps: steps,
  };
}

function add(into: Totals, more: Totals): void {
  into.prompt += more.prompt;
  into.completion += more.completion;
  into.cached += more.cached;
  into.cost += more.cost;
}

/** The run's model, labelled scripted where it is (a scripted model's file path is host-local). */
/** The run's integrity events counted by kind (`{}`: none). */
function integrityCounts(history: HistoryRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of history) if (e.type === "integrity") counts[e.kind] = (counts[e.kind] ?? 0) + 1;
  return counts;
}

function modelLabel(run: ExportRun): string {
  return run.scripted ? "scripted" : run.modelSpec;
}

/** When a node was first worked on: its first pass, or its first history event. */
function firstTime(node: SamNode, passes: Map<string, Pass>, history: HistoryRecord[]): string {
  const times = [...passes.values()]
    .filter((p) => p.node === node.id || p.node.startsWith(`${node.id}/`))
    .map((p) => p.firstTime);
  for (const e of history)
    if ("node" in e && (e.node === node.id || e.node.startsWith(`${node.id}/`))) times.push(e.time);
  return times.sort()[0] ?? history[0]?.time ?? "";
}
