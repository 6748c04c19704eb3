// One run's session: the records (run folder, state, history), the live pieces of the process that
// drives it (model, budget, audit tape, tool settings, status) and the run's concerns, one home each:
// the per-phase sandboxes, the task-folder guard, the gates. Phases get the session and return the
// phase they completed; only the session writes the state (checkpoint, end).

import type { PrescanPlan } from "../../agents/prescan.ts";
import { findNode } from "../../agents/tree.ts";
import type { AuditTape } from "../../audit/tape.ts";
import { RUN_END_EVENT } from "../../audit/types.ts";
import type { Model, ModelRequest, ModelResponse } from "../../llm/types.ts";
import type { HistoryTape } from "../../memory/history.ts";
import { fileSize, readHistory } from "../../memory/history.ts";
import type { SandboxSpec } from "../../policy/spec.ts";
import { outcomeOfEnding, RunEnding } from "../../run-ending.ts";
import type { RunFolder } from "../../run-folder/folder.ts";
import type { LimitConfig, Outcome, Phase, RunState } from "../../run-folder/state.ts";
import { writeState } from "../../run-folder/state.ts";
import type { SamDocument, SamNode } from "../../sam/types.ts";
import type { ToolContext } from "../../tools/tool.ts";
import { Tampering } from "../checks/checks.ts";
import { RunGates } from "../gates/gates.ts";
import type { TaskFolderGuard } from "../task-folder/task-folder.ts";
import type { RunContext, RunRecords } from "./context.ts";
import { type RunControl, writeDecision } from "./control.ts";
import { type PassEvent, totalTokens } from "./conversation.ts";
import type { RunDeps } from "./deps.ts";
import {
  INTEGRITY_AUDIT_EVENT,
  type IntegrityInput,
  IntegrityRecorder,
  ToolCallIntegrity,
} from "./integrity.ts";
import type { RunBudget, RunClock, RunLimits, RunStop } from "./limits.ts";
import { PhaseSandboxes } from "./sandboxes.ts";
import type { RunStatus } from "./status.ts";

export class RunSession implements RunContext {
  readonly home: string;
  readonly folder: RunFolder;
  readonly sam: SamDocument;
  /** The spec recorded at run start: evidence (each sandbox start resolves the grant again). */
  readonly spec: SandboxSpec;
  readonly state: RunState;
  readonly limits: LimitConfig;
  readonly history: HistoryTape;
  readonly deps: RunDeps;
  readonly model: Model & { close(): Promise<void> };
  readonly budget: RunBudget;
  /** The run's clock (deadline, time left), one per run (limits.ts). */
  readonly clock: RunClock;
  /** The run's stop: cancel, deadline and pause in one (limits.ts); phases listen to its signal. */
  readonly stop: RunStop;
  /** A person's decisions (scifi ctl), polled at each phase boundary too. */
  readonly control: RunControl;
  readonly audit: AuditTape;
  /** Tool settings of this run; each phase adds its own sandbox. */
  readonly toolContext: Omit<ToolContext, "sandbox">;
  readonly status: RunStatus;
  readonly sandboxes: PhaseSandboxes;
  readonly taskFolder: TaskFolderGuard;
  readonly gates: RunGates;
  readonly integrity: IntegrityRecorder;
  /** The tool call running now (integrity events name it) and its own result's refusals. */
  readonly #calls: ToolCallIntegrity;

  constructor(
    records: RunRecords,
    deps: RunDeps,
    live: {
      model: Model & { close(): Promise<void> };
      limits: RunLimits;
      audit: AuditTape;
      taskFolder: TaskFolderGuard;
      control: RunControl;
    },
  ) {
    this.home = records.home;
    this.folder = records.folder;
    this.sam = records.sam;
    this.spec = records.spec;
    this.state = records.state;
    this.limits = records.limits;
    this.history = records.history;
    this.deps = deps;
    this.model = live.model;
    this.budget = live.limits.budget;
    this.clock = live.limits.clock;
    this.stop = live.limits.stop;
    this.control = live.control;
    this.audit = live.audit;
    this.toolContext = {
      allowCommands: records.sam.metadata.allowCommands,
      bashTimeoutMs: records.limits.bashTimeoutSec * 1000,
      maxOutputChars: records.limits.toolOutputChars,
      // The stop ends a running command at the clock's deadline (wherever ctl has moved it) or a cancel.
      signal: this.stop.signal,
    };
    this.status = initialStatus(records);
    this.taskFolder = live.taskFolder;
    this.taskFolder.onIntegrity = (input) => this.recordIntegrity(input);
    // Counted as the recorder counts them: without the history's seq and time.
    const already = readHistory(records.folder.files.history).flatMap(({ seq: _seq, time: _time, ...e }) =>
      e.type === "integrity" ? [e] : [],
    );
    this.integrity = new IntegrityRecorder((event) => this.history.append(event), already);
    this.#calls = new ToolCallIntegrity(
      () => this.audit.head()?.seq ?? -1,
      () => this.state.pristine,
      (input) => this.recordIntegrity(input),
      () => this.state.iteration,
    );
    for (const extension of deps.extensions ?? []) extension.onIntegrity?.((n) => this.recordIntegrity(n));
    this.gates = new RunGates(this);
    this.sandboxes = new PhaseSandboxes(this, (spec, role) => this.gates.network(spec, role));
  }

  /** Hidden check assets of this task (the agents are told how many, never which). */
  get hiddenCount(): number {
    return this.state.pristine.files.filter((f) => f.hidden).length;
  }

  /** The plan of the iteration under way (a phase after the pre-scan). */
  plan(): PrescanPlan {
    if (!this.state.plan)
      throw new Error(`run ${this.state.runId}: phase ${this.state.phase} has no plan (corrupt state.json?)`);
    return this.state.plan;
  }

  node(id: string): SamNode {
    const node = findNode(this.sam.root, id);
    if (!node) throw new Error(`SAM has no node '${id}'`);
    return node;
  }

  /** The live display's status, patched. */
  emit(patch: Partial<RunStatus>): void {
    Object.assign(this.status, patch, { elapsedMs: this.budget.elapsedMs() });
    this.deps.onStatus?.({ ...this.status });
  }

  /** A result line for the live display (a check's, a review's), said once. */
  result(result: string): void {
    this.deps.onStatus?.({ ...this.status, result });
  }

  /** Every model response counts against the run's budget as it arrives. */
  account(response: ModelResponse): void {
    this.budget.add(totalTokens(response), response.costUsd);
    this.emit({ tokens: this.budget.tokens, usd: this.budget.usd });
  }

  meta(): ModelRequest["meta"] {
    return {
      runId: this.state.runId,
      iteration: this.state.iteration,
      sam: { file: this.sam.file, sha256: this.sam.sha256 },
    };
  }

  /** A hard limit or refusal on the history. */
  limit(limit: string, detail: string): void {
    this.history.append({ type: "limit", iteration: this.state.iteration, limit, detail });
  }

  /**
   * One integrity event, named by the tool call running now unless the defence names its own role
   * or none; a tool call's is also marked on the audit tape for `scifi audit show`.
   */
  recordIntegrity(input: IntegrityInput): void {
    const current = this.#calls.current;
    // What the sandbox's processes do (a connection) is the running call's only if no earlier call
    // may have left a process running; else the call is not known, and the event says so.
    const earlier =
      input.kind === "network_refused" && input.call === undefined ? this.#calls.earlierBackground() : [];
    const call = input.call === null || earlier.length > 0 ? undefined : (input.call ?? current?.call);
    const attempted =
      earlier.length > 0 && current
        ? `${input.attempted} (while tool call ${current.call.id} ran; a process left running by an earlier call, ${earlier.map((c) => c.id).join(", ")}, may have made it: no call is named)`
        : input.attempted;
    // Outside a tool call, what a defence finds is the work agent's doing (only its code writes).
    const role = input.role ?? current?.role ?? "work";
    const recorded = this.integrity.record({
      type: "integrity",
      iteration: this.state.iteration,
      kind: input.kind,
      role,
      ...(call ? { call } : {}),
      attempted,
      rule: input.rule,
      action: input.action,
    });
    if (!recorded || !call) return;
    try {
      this.audit.append({
        kind: "event",
        event: INTEGRITY_AUDIT_EVENT,
        data: { kind: input.kind, role, call: call.seq, id: call.id, tool: call.tool },
      });
    } catch {
      // The tape is closed (the run ended): the history holds the event.
    }
  }

  onPassEvent(event: PassEvent): void {
    this.#calls.onPassEvent(event);
    if (event.type === "tool_start") return;
    if (event.type === "limit") {
      this.limit(event.limit, event.detail);
    } else if (event.type === "context") {
      // A compaction changes what the model sees: on the history, with the tape recording the requests.
      const { compaction } = event;
      this.history.append({
        type: "context",
        iteration: this.state.iteration,
        action: event.action,
        budget: event.budget,
        elided: compaction.elided,
        tokensBefore: compaction.before,
        tokensAfter: compaction.after,
      });
    } else if (event.type === "step") {
      this.#replayControl();
      this.emit({
        step: event.step,
        stepsLeft: event.limits.stepsLeft(),
        toolCallsLeft: event.limits.toolCallsLeft(),
      });
    } else if (event.type === "tool") {
      this.emit({
        toolCalls: event.limits.toolCalls,
        lastTool: `${event.name}${event.ok ? "" : " (failed)"}`,
      });
    } else {
      this.emit({ tokens: this.budget.tokens, usd: this.budget.usd });
    }
  }

  /**
   * A replay: the recorded run's ctl limit changes due before the request about to be built go
   * through this run's own control path (a decision file, applied and put on the history at once),
   * so the workspace context and the limits are the recorded ones (a41).
   */
  #replayControl(): void {
    const due = this.model.replayedControl?.() ?? [];
    if (due.length === 0) return;
    const at = new Date().toISOString();
    for (const change of due)
      writeDecision(this.folder.files.control, {
        action: "limits",
        at,
        by: `${change.by} (replayed)`,
        limits: change.limits,
      });
    this.control.poll();
  }

  /** The phase that completed, on disk with the spend, the history length and the tape's head. */
  checkpoint(phase: Phase): void {
    const { state } = this;
    if (state.phase === "ended" && phase === "ended") return;
    state.phase = phase;
    state.spent = {
      tokens: this.budget.tokens,
      usd: this.budget.usd,
      elapsedMs: this.budget.elapsedMs(),
      at: new Date().toISOString(),
    };
    state.historyBytes = fileSize(this.folder.files.history);
    // The tape's head, anchored outside the tape: `audit verify` catches a dropped tail or a rewrite.
    state.auditHead = this.audit.anchor();
    writeState(this.folder.files.state, state);
  }

  /**
   * Ends everything of the agent's that outlives its sandbox (the SLURM jobs it submitted: cancelled,
   * `keep_jobs` or not, and waited for); what is still alive after the bound fails the run closed.
   */
  async endAgentWork(reason: string): Promise<void> {
    const alive: string[] = [];
    for (const extension of this.deps.extensions ?? [])
      alive.push(...((await extension.endAgentWork?.(reason)) ?? []));
    if (alive.length > 0) throw new AgentWorkAlive(alive);
  }

  /** Ends the run with the outcome an ending error (RunEnding) gives it, recorded on the history first. */
  endWith(error: Error): void {
    const outcome = outcomeOfEnding(error);
    if (error instanceof Tampering) {
      this.taskFolder.recordTampering(error);
    } else {
      this.limit(outcome.limit, outcome.reason);
    }
    this.end({
      status: outcome.status,
      reason: outcome.reason,
      ...(outcome.cause ? { cause: outcome.cause } : {}),
    });
  }

  /**
   * The pause asked for is taken (at a phase boundary, after the last checkpoint): on the history,
   * on disk; the run's process then leaves as at any exit (sandboxes stopped, task folder restored).
   */
  pause(reason: string): void {
    const { state } = this;
    state.paused = { at: new Date().toISOString(), phase: state.phase, reason };
    this.history.append({
      type: "control",
      iteration: state.iteration,
      action: "paused",
      phase: state.phase,
    });
    this.checkpoint(state.phase);
  }

  /** The run is over (the first outcome set stays): `run_end` on the history, last checkpoint. */
  end(outcome: Outcome): void {
    const { state } = this;
    state.outcome ??= outcome;
    // The tape's own last word: chained and MAC'd, so a tape cut short cannot pass for a finished run.
    this.audit.append({
      kind: "event",
      event: RUN_END_EVENT,
      data: { outcome: state.outcome.status, reason: state.outcome.reason },
    });
    this.history.append({
      type: "run_end",
      outcome: state.outcome.status,
      reason: state.outcome.reason,
      audit: this.audit.anchor(),
    });
    this.checkpoint("ended");
  }
}

/** Jobs of the agent still alive after their cancel and its bound: no verdict beside them. */
export class AgentWorkAlive extends RunEnding {
  override name = "AgentWorkAlive";
  constructor(alive: readonly string[]) {
    super(
      `jobs of the agent are still running after they were cancelled (${alive.join(", ")}); no check runs beside them. Cancel them (scancel) and resume the run`,
      { status: "failed", limit: "jobs" },
    );
  }
}

function initialStatus(records: RunRecords): RunStatus {
  const { state, limits } = records;
  return {
    runId: state.runId,
    iteration: state.iteration,
    phase: state.phase,
    node: state.plan?.node,
    step: 0,
    toolCalls: 0,
    tokens: state.spent.tokens,
    usd: state.spent.usd,
    elapsedMs: state.spent.elapsedMs,
    stepsLeft: limits.stepsPerPass,
    toolCallsLeft: limits.toolCallsPerPass,
    limits,
  };
}
