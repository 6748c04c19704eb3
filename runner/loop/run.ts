// The orchestrator: runs a SAM through iterations of pre-scan -> work -> checks -> review until every
// node is verified or a hard limit is reached, checkpointing after every phase. A SAM passes only
// when every check passed AND the review passed every item; sub-SAMs complete before their parent,
// and a node's checks cover its whole subtree, so the root passes only when every check of the tree
// passes on the final state. Each phase that runs commands gets a sandbox of its own, stopped when
// the phase ends: the checks and the review never run where the work agent ran (docs/loop.md).
import { mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { runFinalReview } from "../agents/final-review.ts";
import { type PrescanPlan, runPrescan } from "../agents/prescan.ts";
import { hiddenChecksNote } from "../agents/prompt.ts";
import { type CheckOutcome, type ReviewVerdict, reviewSystem } from "../agents/review.ts";
import { type ReviewAnswer, ReviewFailed, runReview } from "../agents/run-review.ts";
import { MalformedReply } from "../agents/structured.ts";
import { findNode, parentOf, readyNodes } from "../agents/tree.ts";
import { blockerNudge, workBrief, workSystem } from "../agents/work.ts";
import { DeletionGuard } from "../approval/deletion.ts";
import type { ApprovalGate, ApprovalRecord } from "../approval/gate.ts";
import { RecordWriteFailed } from "../atomic-write.ts";
import { spentOnTape, type TapeSpent } from "../audit/spent.ts";
import { AuditTape } from "../audit/tape.ts";
import { BudgetExceeded, type Model, type ModelRequest, type ModelResponse } from "../llm/types.ts";
import { appendEntry, readMemory, sha256 } from "../memory/entries.ts";
import { cutBack, fileSize, type HistoryEvent, HistoryTape, readHistory } from "../memory/history.ts";
import { homePaths } from "../paths.ts";
import { measureTaskFolder } from "../policy/host-paths.ts";
import { type MountSpec, type SandboxSpec, TASK_MOUNT } from "../policy/spec.ts";
import type { SamDocument, SamNode } from "../sam/types.ts";
import type { QuotaExceeded, Sandbox, SandboxBackend } from "../sandbox/types.ts";
import { extensionTools, type RunExtension } from "../tools/extension.ts";
import { reviewTools, workTools } from "../tools/registry.ts";
import type { ToolContext } from "../tools/tool.ts";
import { copyForChecks, removeLinks } from "./check-copy.ts";
import { groupByHidden, runChecks, subtreeChecks, Tampering } from "./checks.ts";
import { type PassEvent, type PassExit, runPass, totalTokens } from "./conversation.ts";
import { GrantChanged, grantDifferences } from "./grant.ts";
import { DEFAULT_LIMITS, type LimitConfig, RunBudget } from "./limits.ts";
import {
  capturePristine,
  deliverableLinks,
  hideAssets,
  type PristineRequest,
  type PristineSet,
  restorePristine,
} from "./pristine.ts";
import { createRunFolder, openRunFolder, type RunFolder, readSamJson, readSpecJson } from "./records.ts";
import { revivable } from "./revive.ts";
import { lockRun } from "./run-lock.ts";
import { memoryViewEvents, type SharedMemory, sharedMemory } from "./shared-memory.ts";
import { type Outcome, type Phase, type RunState, readState, writeState } from "./state.ts";
import type { RunStatus } from "./status.ts";

/** What the loop needs from outside: a sandbox backend, the gateway, the policy. */
export interface RunDeps {
  backend: SandboxBackend;
  /** Opens the gateway for this run; every call goes to `audit`. */
  openModel(
    audit: AuditTape,
    budget: { usd: number; tokens: number; spent: { usd: number; tokens: number } },
  ): Promise<Model & { close(): Promise<void> }>;
  /** Default-deny policy: the spec granted to this SAM. */
  resolveSpec(
    sam: SamDocument,
    runId: string,
    grant?: { taskFolderBaseBytes?: number },
  ): Promise<SandboxSpec> | SandboxSpec;
  /** Skill index and texts (optional: no skills when absent). */
  skills?: {
    index: string;
    names: readonly string[];
    /** The skills the SAM lists (those that exist): its work agent always gets them. */
    granted?: readonly string[];
    /** Site policy `prescanAddsSkills`: `names` then holds more than `granted`. */
    prescanAdds?: boolean;
    text(name: string): { text: string; sha256: string };
  };
  /** Token budgets of the group and global memory views (site policy `memory`). */
  memoryTokens?: { group: number; global: number };
  /** Host-side additions (e.g. SLURM job tools when the SAM asks for jobs): work tools, a history view. */
  extensions?: readonly RunExtension[];
  /** Actions a person must approve (SAM `approval:` and the site policy): runner/approval/gate.ts. */
  approval?: ApprovalGate;
  onStatus?: (status: RunStatus) => void;
  /** Called once the run folder exists. */
  onCreated?: (dir: string) => void;
  signal?: AbortSignal;
}

export interface StartOptions {
  home: string;
  sam: SamDocument;
  limits?: Partial<LimitConfig>;
  /** Minted once by the run's setup (runner/loop/setup.ts). */
  runId: string;
  /** The model spec, kept in the state so `--resume` uses the same one. */
  model?: string;
}

export interface RunResult {
  runId: string;
  dir: string;
  outcome: Outcome;
  iterations: number;
  spent: RunState["spent"];
}

/** Start a new run of a parsed SAM. */
export async function startRun(options: StartOptions, deps: RunDeps): Promise<RunResult> {
  const runId = options.runId;
  const spec = await deps.resolveSpec(options.sam, runId);
  const folder = createRunFolder(options.home, runId, options.sam, spec);
  const unlock = lockRun(folder, runId);
  try {
    deps.onCreated?.(folder.dir);
    return await firstCheckpointAndDrive(options, deps, runId, spec, folder);
  } finally {
    unlock();
  }
}

async function firstCheckpointAndDrive(
  options: StartOptions,
  deps: RunDeps,
  runId: string,
  spec: SandboxSpec,
  folder: RunFolder,
): Promise<RunResult> {
  const limits = effectiveLimits(options.sam, options.limits);
  // The runner's own copies of what the verdict depends on, taken before any agent runs; hidden
  // assets then leave the task folder until the checks (and come back when the run ends).
  const pristine = capturePristine(
    spec.taskDir,
    pristineRequests(options.sam, spec.taskDir),
    folder.files.pristine,
  );
  hideAssets(spec.taskDir, pristine);
  // The task-folder quota counts what the whole run adds to what the folder held at start.
  const { allocatedBytes } = await measureTaskFolder(spec.taskDir);
  const state: RunState = {
    version: 1,
    runId,
    samFile: options.sam.file,
    samSha256: options.sam.sha256,
    samFiles: options.sam.files,
    pristine,
    taskFolderBaseBytes: allocatedBytes,
    backend: deps.backend.name,
    ...(options.model ? { model: options.model } : {}),
    phase: "created",
    iteration: 0,
    attempts: {},
    completeNodes: [],
    workRank: clampRank(options.sam.metadata.rank?.work ?? 1, rankRange(options.sam)),
    spent: { tokens: 0, usd: 0, elapsedMs: 0 },
    limits,
    historyBytes: 0,
    resumes: 0,
  };
  const history = new HistoryTape(folder.files.history);
  history.append({
    type: "run_start",
    sam: options.sam.file,
    sha256: options.sam.sha256,
    backend: deps.backend.name,
  });
  for (const extension of deps.extensions ?? []) extension.onHistory?.((event) => history.append(event));
  // First checkpoint before anything can fail, so even a run killed while starting can be resumed.
  state.historyBytes = fileSize(folder.files.history);
  writeState(folder.files.state, state);
  return drive({ home: options.home, folder, sam: options.sam, spec, state, limits, history }, deps);
}

/** Continue a run whose process died, from its last completed phase, with a fresh sandbox. */
export async function resumeRun(home: string, runId: string, deps: RunDeps): Promise<RunResult> {
  const folder = openRunFolder(home, runId);
  // Before anything is read or cut back: a run still driven by a live process is refused.
  const unlock = lockRun(folder, runId);
  try {
    return await resumeLocked(home, runId, deps, folder);
  } finally {
    unlock();
  }
}

async function resumeLocked(
  home: string,
  runId: string,
  deps: RunDeps,
  folder: RunFolder,
): Promise<RunResult> {
  const state = readState(folder.files.state);
  const sam = readSamJson(folder);
  const limits = state.limits;
  if (!state.pristine) {
    throw new Error(
      `run ${runId} was started by an older scifi without pristine copies of its check assets; start the task again`,
    );
  }
  if (state.outcome && state.phase === "ended") {
    return {
      runId,
      dir: folder.dir,
      outcome: state.outcome,
      iterations: state.iteration,
      spent: state.spent,
    };
  }
  // Money, tokens and time as the tape has them: every call was written before it returned, so the
  // tape knows what the dead process spent after its last checkpoint; the state may not.
  state.spent = spentSince(state.spent, spentOnTape(folder.files.audit));
  // Events of the interrupted phase were never checkpointed: cut them so nothing is duplicated.
  const before = readHistory(folder.files.history).length;
  cutBack(folder.files.history, state.historyBytes);
  const history = new HistoryTape(folder.files.history);
  const discarded = before - history.length;
  state.resumes++;
  // The recorded spec is evidence, never input: every sandbox start resolves the grant again and
  // compares it with this (runner/loop/grant.ts).
  const spec = readSpecJson(folder);
  // A run killed during its checks left its hidden assets in the task folder.
  hideAssets(spec.taskDir, state.pristine);
  history.append({
    type: "resumed",
    fromPhase: state.phase,
    iteration: state.iteration,
    discardedEvents: discarded,
  });
  for (const extension of deps.extensions ?? []) extension.onHistory?.((event) => history.append(event));
  const audit = new AuditTape(folder.files.audit, { runId });
  audit.append({
    kind: "event",
    event: "resumed",
    data: { fromPhase: state.phase, iteration: state.iteration, resumes: state.resumes },
  });
  audit.close();
  return drive({ home, folder, sam, spec, state, limits, history }, deps);
}

interface RunContext {
  home: string;
  folder: RunFolder;
  sam: SamDocument;
  spec: SandboxSpec;
  state: RunState;
  limits: LimitConfig;
  history: HistoryTape;
}

/** Live pieces of a running process: model, budget, tape. Sandboxes live only as long as a phase. */
interface Live {
  model: Model & { close(): Promise<void> };
  budget: RunBudget;
  audit: AuditTape;
  /** Tool settings of this run; each phase adds its own sandbox. */
  toolContext: Omit<ToolContext, "sandbox">;
  status: RunStatus;
}

async function drive(ctx: RunContext, deps: RunDeps): Promise<RunResult> {
  const { state, limits } = ctx;
  const budget = new RunBudget(limits, state.spent);
  const audit = new AuditTape(ctx.folder.files.audit, { runId: state.runId });
  let model: (Model & { close(): Promise<void> }) | undefined;
  // Wall time is also enforced inside the sandbox: at the deadline every running command (a tool
  // call, a check) is killed, whatever the agent's files do; the next budget check ends the run.
  const wall = new AbortController();
  const deadline = setTimeout(
    () => wall.abort(),
    Math.max(0, limits.walltimeSec * 1000 - budget.elapsedMs()),
  );
  deadline.unref();
  const commandSignal = deps.signal ? AbortSignal.any([deps.signal, wall.signal]) : wall.signal;
  try {
    // One count of money and tokens: the gateway checks the run's caps before every call (every
    // role), starting from what the run has really spent, earlier processes included.
    model = await deps.openModel(audit, {
      usd: limits.usd,
      tokens: limits.tokens,
      spent: { usd: budget.usd, tokens: budget.tokens },
    });
    const live: Live = {
      model,
      budget,
      audit,
      toolContext: {
        allowCommands: ctx.sam.metadata.allowCommands,
        bashTimeoutMs: limits.bashTimeoutSec * 1000,
        maxOutputChars: limits.toolOutputChars,
        signal: commandSignal,
      },
      status: initialStatus(ctx, limits),
    };
    emit(deps, live, {});
    deps.approval?.attach({
      record: (record) => recordApproval(ctx, live, record),
      iteration: () => state.iteration,
      onWaiting: (request) =>
        emit(deps, live, {
          notice: request
            ? `awaiting approval ${request.id} (${request.action}): scifi approve ${state.runId} ${request.id} | scifi deny ${state.runId} ${request.id} --reason TEXT`
            : undefined,
        }),
    });
    for (const extension of deps.extensions ?? [])
      extension.onAudit?.((event, data) => live.audit.append({ kind: "event", event, data }));
    while (state.phase !== "ended") await step(ctx, live, deps);
  } finally {
    clearTimeout(deadline);
    state.spent = { tokens: budget.tokens, usd: budget.usd, elapsedMs: budget.elapsedMs() };
    await model?.close().catch(() => undefined);
    audit.close();
    // Hidden assets are back in the user's task folder once the run is over (or stopped).
    returnHiddenAssets(ctx);
  }
  const outcome = state.outcome ?? { status: "failed", reason: "the run stopped without an outcome" };
  return {
    runId: state.runId,
    dir: ctx.folder.dir,
    outcome,
    iterations: state.iteration,
    spent: state.spent,
  };
}

type SandboxRole = "work" | "checks" | "review";

/** The checks' copy of the task folder stops at this many allocated bytes (the run fails beyond). */
const CHECK_COPY_MAX_BYTES = 16 * 1024 ** 3;

/** The same spec with the task folder (and every mount source inside it) moved to `copy`. */
function onCopy(spec: SandboxSpec, copy: string): SandboxSpec {
  const moved = (path: string) =>
    path === spec.taskDir || path.startsWith(`${spec.taskDir}/`)
      ? copy + path.slice(spec.taskDir.length)
      : path;
  return { ...spec, taskDir: copy, mounts: spec.mounts.map((m) => ({ ...m, source: moved(m.source) })) };
}

/** The check sandbox's environment on top of the grant's: no writable home, no Python user site or cwd import. */
const CHECK_ENV = {
  HOME: "/nonexistent",
  PYTHONNOUSERSITE: "1",
  PYTHONDONTWRITEBYTECODE: "1",
  // Neither the working folder (/task, the agent's) nor the script's folder goes first on
  // sys.path, so no module the agent wrote shadows the standard library in a Python check.
  PYTHONSAFEPATH: "1",
};

/**
 * A fresh sandbox for one phase, from a grant resolved again from the parsed SAM and the site
 * policy (never replayed from the recorded spec), stopped when `use` ends, whatever happens.
 */
async function withSandbox<T>(
  ctx: RunContext,
  deps: RunDeps,
  role: SandboxRole,
  phase: PhaseOptions,
  use: (sandbox: Sandbox) => Promise<T>,
): Promise<T> {
  const sandbox = revivable(await openSandbox(ctx, deps, role, phase), {
    open: () => openSandbox(ctx, deps, role, phase),
    onDeath: (deaths, detail) => {
      ctx.history.append({
        type: "sandbox_died",
        iteration: ctx.state.iteration,
        phase: role,
        deaths,
        detail,
      });
    },
  });
  try {
    return await use(sandbox);
  } finally {
    await sandbox.stop().catch(() => undefined);
  }
}

/** How a phase's sandbox differs: its name, a copy of the task folder, whether it sees hidden assets. */
interface PhaseOptions {
  name?: string;
  taskCopy?: string;
  seesHidden?: boolean;
}

async function openSandbox(
  ctx: RunContext,
  deps: RunDeps,
  role: SandboxRole,
  phase: PhaseOptions = {},
): Promise<Sandbox> {
  const { state } = ctx;
  const resumed = state.resumes > 0 ? `-r${state.resumes}` : "";
  const name = `${state.runId}${resumed}-${phase.name ?? role}${state.iteration}`;
  // Resolved for the run (its labels and environment name the run), started under the phase's name.
  const granted = await deps.resolveSpec(ctx.sam, state.runId, {
    ...(state.taskFolderBaseBytes !== undefined ? { taskFolderBaseBytes: state.taskFolderBaseBytes } : {}),
  });
  const changes = grantDifferences(ctx.spec, granted);
  if (changes.length > 0) throw new GrantChanged(name, changes);
  let spec = phaseSpec(granted, role, ctx.state.pristine, phase.seesHidden === true);
  // `approval: [network]`: a person says yes before a sandbox with network starts (asked once a run;
  // a denial starts it without network).
  if ((spec.network || spec.networkRules) && deps.approval?.requires("network")) {
    const answer = await deps.approval.ask(
      {
        action: "network",
        summary: `start the ${role} sandbox of ${ctx.sam.metadata.name} with network access`,
        detail: spec.network
          ? `image ${spec.image}; network: on (the SAM asks for it and the site allows it)`
          : `image ${spec.image}; network: only ${spec.networkRules?.allow.join(", ")}, through the run's proxy`,
      },
      { once: true },
    );
    if (!answer.approved) spec = { ...spec, network: false, networkRules: undefined };
  }
  // Hosts a person approved at run time join the host list (after the grant comparison, as above).
  const approvedHosts = (deps.extensions ?? []).flatMap((e) => e.networkAllow?.() ?? []);
  if (spec.networkRules && approvedHosts.length > 0)
    spec = {
      ...spec,
      networkRules: { ...spec.networkRules, allow: [...spec.networkRules.allow, ...approvedHosts] },
    };
  return deps.backend.start({ ...(phase.taskCopy ? onCopy(spec, phase.taskCopy) : spec), runId: name });
}

/**
 * The work sandbox gets the grant as resolved. The check sandbox also gets the hidden assets and
 * whole asset folders bound read-only (a check that runs the agent's code cannot plant a module
 * beside an asset for the next check), no network, and a HOME that does not exist, so no hook in
 * a home folder (`usercustomize.py`, `.Rprofile`, `.profile`) that agent code wrote during one
 * check runs in the next. The review sees the task folder read-only.
 */
export function phaseSpec(
  spec: SandboxSpec,
  role: SandboxRole,
  pristine: PristineSet,
  seesHidden = false,
): SandboxSpec {
  if (role === "work") return spec;
  if (role === "checks") {
    const readOnly = (rel: string, reason: string): MountSpec => ({
      source: join(spec.taskDir, rel),
      target: `${TASK_MOUNT}/${rel}`,
      readOnly: true,
      reason,
    });
    const folders = pristine.folders
      .filter((f) => !pristine.folders.some((outer) => f.startsWith(`${outer}/`)))
      .map((f) => readOnly(f, "check asset folder"));
    const hidden = seesHidden
      ? pristine.files.filter((f) => f.hidden).map((f) => readOnly(f.rel, "hidden check asset"))
      : [];
    // Checks that see hidden assets get the task folder (the checks' copy) read-only: nothing they
    // write there (a diff against the reference) can reach a later check that runs the agent's code.
    const mounts = seesHidden
      ? spec.mounts.map((m) => (m.target === TASK_MOUNT ? { ...m, readOnly: true } : m))
      : spec.mounts;
    return {
      ...spec,
      network: false,
      networkRules: undefined,
      mounts: [...mounts, ...folders, ...hidden],
      env: { ...spec.env, ...CHECK_ENV },
    };
  }
  return {
    ...spec,
    network: false,
    networkRules: undefined,
    mounts: spec.mounts.map((m) => ({ ...m, readOnly: true })),
  };
}

/** One phase transition, then a checkpoint. */
async function step(ctx: RunContext, live: Live, deps: RunDeps): Promise<void> {
  const { state } = ctx;
  try {
    const next = await runPhase(ctx, live, deps);
    checkpoint(ctx, live, next);
  } catch (error) {
    const outcome = outcomeOfError(error);
    if (!outcome) throw error;
    if (error instanceof Tampering) {
      for (const found of error.found) {
        ctx.history.append({
          type: "tampering",
          iteration: state.iteration,
          file: found.absolute,
          problem: found.problem,
          expected: found.expected,
          actual: found.actual,
        });
      }
    } else {
      ctx.history.append({
        type: "limit",
        iteration: state.iteration,
        limit: outcome.limit,
        detail: outcome.reason,
      });
    }
    endRun(ctx, live, {
      status: outcome.status,
      reason: outcome.reason,
      ...(outcome.cause ? { cause: outcome.cause } : {}),
    });
  }
}

async function runPhase(ctx: RunContext, live: Live, deps: RunDeps): Promise<Phase> {
  const { state } = ctx;
  switch (state.phase) {
    case "created":
    case "iteration_end":
      return beginIteration(ctx, live, deps);
    case "prescan":
      return workPhase(ctx, live, deps);
    case "work":
      return checksPhase(ctx, live, deps);
    case "checks":
      return reviewPhase(ctx, live, deps);
    case "review":
      return endIteration(ctx, live, deps);
    case "final_review":
      endRun(ctx, live, state.outcome ?? { status: "failed", reason: "no outcome" });
      return "ended";
    case "ended":
      return "ended";
  }
}

async function beginIteration(ctx: RunContext, live: Live, deps: RunDeps): Promise<Phase> {
  const { state, sam } = ctx;
  // `approval: [run]`: before the first iteration a person says the task may start (nothing runs yet).
  if (state.iteration === 0 && deps.approval?.requires("run")) {
    const answer = await deps.approval.ask(
      { action: "run", summary: `start task ${sam.metadata.name}`, detail: `SAM ${sam.file}` },
      { once: true },
    );
    if (!answer.approved) {
      const d = answer.decision;
      endRun(ctx, live, {
        status: "blocked",
        reason: `a person (${d.who}) did not let the task start: ${d.note ?? "no reason given"}`,
      });
      return "ended";
    }
  }
  state.iteration++;
  state.plan = undefined;
  state.work = undefined;
  state.checks = undefined;
  state.verdict = undefined;
  ctx.history.append({ type: "iteration_start", iteration: state.iteration });
  emit(deps, live, { iteration: state.iteration, phase: "prescan" });
  const complete = new Set(state.completeNodes);
  const taskMemoryText = readMemory(ctx.folder.files.memory);
  // Group and global memory as bounded views (runner/memory/view.ts). A replay reads shared memory
  // as the recorded run did: nothing written since it started.
  const before = live.model.memoryAsOf;
  const shared = sharedMemory(ctx.home, sam.metadata.group, deps.memoryTokens, before);
  for (const event of memoryViewEvents(shared, state.iteration, before)) ctx.history.append(event);
  const range = rankRange(sam);
  let plan: PrescanPlan;
  try {
    plan = await prescan(ctx, live, deps, complete, taskMemoryText, shared, range);
  } catch (error) {
    if (!(error instanceof MalformedReply)) throw error;
    return failedPrescan(ctx, live, deps, error.message);
  }
  if (state.direction && state.direction !== plan.direction) {
    ctx.history.append({
      type: "direction_change",
      iteration: state.iteration,
      from: state.direction,
      to: plan.direction,
    });
  }
  state.direction = plan.direction;
  state.plan = plan;
  const added = plan.skills.filter((name) => !(deps.skills?.granted ?? []).includes(name));
  ctx.history.append({
    type: "prescan",
    iteration: state.iteration,
    node: plan.node,
    rank: plan.rank,
    skills: plan.skills,
    direction: plan.direction,
    ...(added.length > 0 ? { addedSkills: added } : {}),
  });
  return "prescan";
}

function prescan(
  ctx: RunContext,
  live: Live,
  deps: RunDeps,
  complete: ReadonlySet<string>,
  taskMemoryText: string,
  shared: SharedMemory,
  range: { min: number; max: number },
): Promise<PrescanPlan> {
  const { state, sam } = ctx;
  const { group, global } = shared;
  return runPrescan(
    live.model,
    {
      root: sam.root,
      complete,
      iteration: state.iteration,
      rank: { ...range, suggested: state.workRank },
      controlRank: sam.metadata.rank?.control ?? 1,
      taskMemory: { text: taskMemoryText, ref: `memory:task:${state.runId}`, sha256: sha256(taskMemoryText) },
      groupMemory: group
        ? { group: group.group, text: group.view.text, ref: group.ref, sha256: group.sha256 }
        : undefined,
      globalMemory: { text: global.view.text, ref: global.ref, sha256: global.sha256 },
      // The memory views are in the prompt already; their records would only repeat them.
      history: ctx.history
        .tail(20)
        .filter((event) => event.type !== "memory_view")
        .map((event) => JSON.stringify(briefEvent(event)))
        .join("\n"),
      skillIndex: deps.skills?.index ?? "(no skills available for this task)",
      skillNames: deps.skills?.names ?? [],
      grantedSkills: deps.skills?.granted ?? [],
      meta: meta(ctx),
    },
    (response) => account(live, deps, response),
  );
}

/** The planner sees the end of a check's output; the whole tail is in the task memory and the report. */
function briefEvent(event: HistoryEvent): HistoryEvent {
  if (event.type !== "check" || !event.output) return event;
  return { ...event, output: event.output.split("\n").slice(-5).join("\n") };
}

/** A pre-scan without a valid plan (after its one retry) fails the iteration, not the run. */
async function failedPrescan(ctx: RunContext, live: Live, deps: RunDeps, reason: string): Promise<Phase> {
  const { state } = ctx;
  const key = "(pre-scan)";
  state.attempts[key] = (state.attempts[key] ?? 0) + 1;
  ctx.history.append({
    type: "iteration_end",
    iteration: state.iteration,
    passed: false,
    reason,
    audit: live.audit.anchor(),
  });
  if ((state.attempts[key] ?? 0) >= ctx.limits.iterations) {
    return finish(ctx, live, deps, {
      status: "failed",
      reason: `iteration limit reached: ${ctx.limits.iterations} pre-scans without a valid plan (last: ${reason})`,
    });
  }
  return "iteration_end";
}

async function workPhase(ctx: RunContext, live: Live, deps: RunDeps): Promise<Phase> {
  const { state, sam } = ctx;
  const plan = requirePlan(state);
  const node = requireNode(sam.root, plan.node);
  emit(deps, live, { phase: "work", node: node.id, step: 0, toolCalls: 0 });
  // The SAM's skills are the grant; the plan's (checked against the index) come after them.
  const skillNames = [...new Set([...(deps.skills?.granted ?? []), ...plan.skills])];
  const skills = skillNames.map((name) => ({
    name,
    ...(deps.skills?.text(name) ?? { text: "", sha256: "" }),
  }));
  let overQuota: QuotaExceeded | undefined;
  // `approval: [delete]`: the files of the task folder at the first work pass are copied into the run
  // folder and compared after every tool call (runner/approval/deletion.ts).
  const deletion = deps.approval?.requires("delete")
    ? DeletionGuard.open({
        taskDir: ctx.spec.taskDir,
        dir: join(ctx.folder.dir, "deletion"),
        gate: deps.approval,
      })
    : undefined;
  const result = await withSandbox(ctx, deps, "work", {}, async (sandbox) => {
    const pass = await runPass({
      model: live.model,
      tools: new Map([...workTools, ...extensionTools(deps.extensions).map((t) => [t.name, t] as const)]),
      toolContext: { ...live.toolContext, sandbox },
      limits: ctx.limits,
      budget: live.budget,
      request: {
        role: "work",
        kind: "work",
        rank: plan.rank,
        system: workSystem(),
        injected: skills.map((s) => ({ kind: "skill" as const, ref: `skill:${s.name}`, sha256: s.sha256 })),
        meta: meta(ctx),
      },
      brief: workBrief(node, parentOf(sam.root, node.id), plan, skills) + hiddenChecksNote(hiddenCount(ctx)),
      textReply: "nudge",
      blockerNudge,
      onEvent: (event) => onPassEvent(ctx, live, deps, event),
      signal: deps.signal,
      ...(deletion ? { afterTool: () => deletion.afterTool(sandbox) } : {}),
    });
    // Over the task-folder quota when the pass ended: the agent did not clean up after the
    // refused tool calls, so the run ends (the checks would only fill the disk further).
    overQuota = sandbox.quotaExceeded?.();
    return pass;
  });
  // A removal after the agent's last call (a background process), found with the sandbox stopped.
  await deletion?.afterPass();
  const exit = result.exit;
  state.work = {
    exit: exit.type,
    claim: exit.type === "done" ? exit.claim : undefined,
    summary: exit.type === "done" ? exit.summary : exitReason(exit),
    steps: result.steps,
    toolCalls: result.toolCalls,
  };
  ctx.history.append({
    type: "work_end",
    iteration: state.iteration,
    node: node.id,
    exit: exit.type,
    steps: result.steps,
    toolCalls: result.toolCalls,
  });
  if (exit.type === "blocker") {
    return finish(ctx, live, deps, {
      status: "blocked",
      reason: `the work agent reported a blocker: ${exit.reason} (needs: ${exit.needs})`,
    });
  }
  if (exit.type === "stalled") {
    return finish(ctx, live, deps, {
      status: "blocked",
      reason: `the work agent kept failing: ${exit.reason}`,
    });
  }
  if (exit.type === "budget") {
    endRun(ctx, live, { status: "failed", reason: exit.reason });
    return "ended";
  }
  if (overQuota) {
    ctx.history.append({
      type: "limit",
      iteration: state.iteration,
      limit: "quota",
      detail: overQuota.message,
    });
    return finish(ctx, live, deps, { status: "failed", reason: `task-folder quota: ${overQuota.message}` });
  }
  return "work";
}

async function checksPhase(ctx: RunContext, live: Live, deps: RunDeps): Promise<Phase> {
  const { state, sam } = ctx;
  const node = requireNode(sam.root, requirePlan(state).node);
  emit(deps, live, { phase: "checks" });
  // The work sandbox is gone: nothing of the agent runs while the runner restores and checks.
  guardTaskFiles(ctx);
  const links = await deliverableLinks(ctx.spec.taskDir);
  if (links.length > 0) {
    ctx.history.append({ type: "deliverable_links", iteration: state.iteration, links });
  }
  const notice = links.length
    ? `scifi: ${links.length} symlink(s) in the task folder point outside it or nowhere (they are not deliverables):\n${links
        .slice(0, 20)
        .map((l) => `  ${l.path} -> ${l.target} (${l.problem})`)
        .join("\n")}`
    : undefined;
  // With hidden assets the checks run on a throw-away copy of the task folder: what the agent's code
  // writes while a check runs it never reaches the real folder. Only the checks marked `hidden` see
  // the hidden assets, each run of them in a sandbox of its own; the others run without them.
  const checkDir = hiddenCount(ctx) > 0 ? join(ctx.folder.dir, "checks-copy") : undefined;
  try {
    if (checkDir) copyTaskFolder(ctx, checkDir);
    const shown: CheckOutcome[] = [];
    for (const [index, group] of groupByHidden(subtreeChecks(node)).entries()) {
      const seesHidden = checkDir !== undefined && group.hidden;
      if (checkDir) showHiddenInCopy(ctx, checkDir, seesHidden);
      const phase = { name: `checks${index > 0 ? `.${index + 1}` : ""}`, taskCopy: checkDir, seesHidden };
      await withSandbox(ctx, deps, "checks", phase, (sandbox) =>
        runChecks({
          sandbox,
          node,
          checks: group.checks,
          notice,
          signal: live.toolContext.signal,
          onCheck: (outcome) => {
            const c = seesHidden ? withheld(ctx, outcome) : outcome;
            shown.push(c);
            ctx.history.append({
              type: "check",
              iteration: state.iteration,
              node: c.node ?? node.id,
              check: c.id,
              passed: c.passed,
              exitCode: c.exitCode,
              ...(c.timedOut ? { timedOut: true } : {}),
              output: c.output,
            });
            deps.onStatus?.({ ...live.status, result: checkResult(c) });
          },
        }),
      );
    }
    state.checks = shown;
  } finally {
    if (checkDir) rmSync(checkDir, { recursive: true, force: true });
  }
  // `approval: [delete]`: the agent's code a check ran in the task folder may have removed start files.
  if (deps.approval?.requires("delete") && !checkDir) {
    const dir = join(ctx.folder.dir, "deletion");
    await DeletionGuard.open({ taskDir: ctx.spec.taskDir, dir, gate: deps.approval }).afterPass(
      "while the checks ran the agent's code",
    );
  }
  return "checks";
}

/**
 * The output of a check that sees hidden assets can carry them (the agent's code, run by the check,
 * may print the reference), and the history, the review brief and task memory all reach agents. The output
 * goes to `runs/<id>/check-output/` for people instead; agents learn pass or fail and the exit code.
 */
function withheld(ctx: RunContext, outcome: CheckOutcome): CheckOutcome {
  const dir = join(ctx.folder.dir, "check-output");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `it${ctx.state.iteration}-${outcome.id.replace(/[^A-Za-z0-9._-]+/g, "_")}.txt`);
  writeFileSync(file, outcome.output, { mode: 0o600 });
  return {
    ...outcome,
    output: `(output withheld from the agents: this task has hidden check assets; see ${relative(ctx.folder.dir, file)} in the run folder)`,
  };
}

/** The task folder as the agent left it, in a folder of the run's own. */
function copyTaskFolder(ctx: RunContext, checkDir: string): void {
  const root = process.getuid?.() === 0;
  const skipped = copyForChecks(ctx.spec.taskDir, checkDir, {
    maxBytes: CHECK_COPY_MAX_BYTES,
    ...(root ? { owner: ctx.spec.user } : {}),
  });
  if (skipped.length > 0) {
    ctx.history.append({ type: "asset_cleanup", iteration: ctx.state.iteration, removed: skipped });
  }
}

/**
 * Puts the hidden assets into the checks' copy for checks that see them, and takes them out for the
 * others. Before they go in, every symlink in the copy goes: a deliverable linked to a hidden
 * asset's path (made by the agent, or by its code during an earlier check) would hand the
 * reference itself to the comparison.
 */
function showHiddenInCopy(ctx: RunContext, checkDir: string, show: boolean): void {
  const hidden = ctx.state.pristine.files.filter((f) => f.hidden);
  if (!show) {
    hideAssets(checkDir, ctx.state.pristine);
    return;
  }
  const links = removeLinks(checkDir);
  if (links.length > 0) {
    ctx.history.append({ type: "asset_cleanup", iteration: ctx.state.iteration, removed: links });
  }
  restorePristine(checkDir, ctx.folder.files.pristine, { files: hidden, folders: [] }, true);
}

/**
 * Puts SAM files and check assets back from the runner's copies and cleans asset folders. Anything
 * at those paths that was not the same regular file is tampering, and ends the run.
 */
function guardTaskFiles(ctx: RunContext): void {
  const { state } = ctx;
  const taskDir = ctx.spec.taskDir;
  const report = restorePristine(taskDir, ctx.folder.files.pristine, state.pristine, false);
  if (report.removed.length > 0) {
    ctx.history.append({ type: "asset_cleanup", iteration: state.iteration, removed: report.removed });
  }
  if (report.tampering.length === 0) return;
  const byRel = new Map(state.pristine.files.map((f) => [f.rel, f]));
  throw new Tampering(
    report.tampering.map((t) => {
      const file = byRel.get(t.file);
      return {
        ...t,
        absolute: join(taskDir, t.file),
        what: file?.kind === "sam" ? "SAM file" : file ? "check asset" : "check asset folder",
        expected: file?.sha256 ?? "folder",
        actual: t.problem,
      };
    }),
  );
}

/** At the end of a run the user's task folder holds the hidden assets again. */
function returnHiddenAssets(ctx: RunContext): void {
  const hidden = ctx.state.pristine.files.filter((f) => f.hidden);
  if (hidden.length === 0) return;
  try {
    restorePristine(ctx.spec.taskDir, ctx.folder.files.pristine, { files: hidden, folders: [] }, true);
  } catch (error) {
    ctx.history.append({
      type: "limit",
      iteration: ctx.state.iteration,
      limit: "hidden_assets",
      detail: `could not put the hidden assets back into the task folder (copies are in ${ctx.folder.files.pristine}): ${messageOf(error)}`,
    });
  }
}

async function reviewPhase(ctx: RunContext, live: Live, deps: RunDeps): Promise<Phase> {
  const { state, sam } = ctx;
  const node = requireNode(sam.root, requirePlan(state).node);
  guardTaskFiles(ctx);
  emit(deps, live, { phase: "review", step: 0, toolCalls: 0 });
  const checks = state.checks ?? [];
  const verdict: ReviewVerdict = await reviewNode(ctx, live, deps, node, checks).catch((error: unknown) => {
    // No valid verdict after one retry: the iteration fails (recorded as a failed review).
    if (!(error instanceof ReviewFailed)) throw error;
    return { items: [], findings: [error.message], fixes: [], rank_adjustment: 0 as const };
  });
  const checksPassed = checks.every((c) => c.passed);
  const itemsPassed = node.items.every((item) => verdict.items.find((v) => v.id === item.id)?.pass === true);
  const passed = checksPassed && itemsPassed && !verdict.blocked;
  state.verdict = { ...verdict, passed };
  ctx.history.append({
    type: "verdict",
    iteration: state.iteration,
    node: node.id,
    passed,
    items: verdict.items.map((i) => ({ id: i.id, pass: i.pass, evidence: i.evidence })),
    checksPassed,
    findings: verdict.findings,
    fixes: verdict.fixes,
    rankAdjustment: verdict.rank_adjustment,
    ...(verdict.blocked ? { blocked: verdict.blocked.reason } : {}),
  });
  deps.onStatus?.({ ...live.status, result: verdictResult(node.id, passed, checksPassed, verdict) });
  return "review";
}

/** One line for the live display: a check's result (piped output shows it as a line of its own). */
function checkResult(c: { id: string; passed: boolean; exitCode: number; timedOut?: boolean }): string {
  return `check ${c.id} ${c.passed ? "passed" : "FAILED"} (exit ${c.exitCode}${c.timedOut ? ", timed out" : ""})`;
}

function verdictResult(
  node: string,
  passed: boolean,
  checksPassed: boolean,
  verdict: { items: { id: string; pass: boolean }[]; blocked?: { reason: string } },
): string {
  const failed = verdict.items.filter((i) => !i.pass).map((i) => i.id);
  const why = verdict.blocked
    ? `: blocked: ${verdict.blocked.reason}`
    : !checksPassed
      ? ": checks failed"
      : failed.length
        ? `: failed items ${failed.join(", ")}`
        : "";
  return `review of ${node} ${passed ? "passed" : "FAILED"}${why}`;
}

/** The review agent, in a sandbox of its own that sees the task folder read-only. */
function reviewNode(
  ctx: RunContext,
  live: Live,
  deps: RunDeps,
  node: SamNode,
  checks: CheckOutcome[],
): Promise<ReviewVerdict> {
  const { state } = ctx;
  const request = {
    role: "review" as const,
    kind: "control" as const,
    rank: ctx.sam.metadata.rank?.control ?? 1,
    system: reviewSystem(),
    meta: meta(ctx),
  };
  return runReview({
    node,
    note: hiddenChecksNote(hiddenCount(ctx)),
    work: state.work ?? { exit: "none" },
    checks,
    openSandbox: () => openSandbox(ctx, deps, "review"),
    converse: async (brief, sandbox): Promise<ReviewAnswer> => {
      const { exit } = await runPass({
        model: live.model,
        tools: reviewTools,
        toolContext: { ...live.toolContext, sandbox, allowCommands: undefined },
        limits: ctx.limits,
        budget: live.budget,
        request,
        brief,
        textReply: "answer",
        blockerNudge: () => "The runner: your tool calls keep failing. Answer now with the JSON verdict.",
        onEvent: (event: PassEvent) => onPassEvent(ctx, live, deps, event),
        signal: deps.signal,
      });
      // A spent budget ends the run as such, never as a bad verdict that starts another paid iteration.
      if (exit.type === "budget") throw new BudgetExceeded(exit.reason);
      return exit.type === "answer"
        ? { json: exit.response.json, text: exit.text }
        : { noAnswer: `${exit.type}: ${exitReason(exit)}` };
    },
  });
}

async function endIteration(ctx: RunContext, live: Live, deps: RunDeps): Promise<Phase> {
  const { state, sam } = ctx;
  const plan = requirePlan(state);
  const verdict = state.verdict;
  const node = requireNode(sam.root, plan.node);
  if (verdict?.passed) {
    state.completeNodes.push(node.id);
    ctx.history.append({ type: "node_complete", iteration: state.iteration, node: node.id });
    ctx.history.append({
      type: "iteration_end",
      iteration: state.iteration,
      passed: true,
      audit: live.audit.anchor(),
    });
    if (node.id === sam.root.id) {
      const confirmed = await confirmPass(ctx, deps);
      if (confirmed !== undefined) return finish(ctx, live, deps, { status: "failed", reason: confirmed });
      return finish(ctx, live, deps, { status: "passed", reason: "every check and review item passed" });
    }
    return "iteration_end";
  }
  state.attempts[node.id] = (state.attempts[node.id] ?? 0) + 1;
  await writeFailureMemory(ctx, node);
  if (verdict) state.workRank = clampRank(state.workRank + verdict.rank_adjustment, rankRange(sam));
  const reason = failureReason(state);
  ctx.history.append({
    type: "iteration_end",
    iteration: state.iteration,
    passed: false,
    reason,
    audit: live.audit.anchor(),
  });
  if (verdict?.blocked)
    return finish(ctx, live, deps, {
      status: "blocked",
      reason: `the review asked for a human: ${verdict.blocked.reason}`,
    });
  if ((state.attempts[node.id] ?? 0) >= ctx.limits.iterations) {
    ctx.history.append({
      type: "limit",
      iteration: state.iteration,
      limit: "iterations",
      detail: `${ctx.limits.iterations} failed attempts at ${node.id}`,
    });
    return finish(ctx, live, deps, {
      status: "failed",
      reason: `iteration limit reached: ${ctx.limits.iterations} failed attempts at node ${node.id} (last: ${reason})`,
    });
  }
  return "iteration_end";
}

/** The failed review writes what was tried and what to fix; the next pre-scan reads it. */
async function writeFailureMemory(ctx: RunContext, node: SamNode): Promise<void> {
  const { state } = ctx;
  const verdict = state.verdict;
  const failedChecks = (state.checks ?? []).filter((c) => !c.passed);
  const lines = [
    `Node ${node.id} (${node.title}), iteration ${state.iteration}, direction: ${state.direction ?? "-"}.`,
    "",
    `**Tried:** ${state.work?.claim ?? `no claim (${state.work?.exit ?? "no work"})`}`,
    state.work?.summary ? `**Work summary:** ${state.work.summary}` : "",
    failedChecks.length ? `**Failed checks:**\n${failedChecks.map(failedCheckEntry).join("\n")}` : "",
    verdict?.findings.length ? `**Findings:**\n${verdict.findings.map((f) => `- ${f}`).join("\n")}` : "",
    verdict?.fixes.length
      ? `**Fixes for the next attempt:**\n${verdict.fixes.map((f) => `- ${f}`).join("\n")}`
      : "",
  ].filter((line) => line !== "");
  await appendEntry(ctx.folder.files.memory, {
    id: `${state.runId}/it${state.iteration}/review`,
    time: new Date().toISOString(),
    runId: state.runId,
    role: "review",
    title: `Iteration ${state.iteration}: review failed ${node.id}`,
    body: lines.join("\n"),
  });
}

/** A failed check in task memory: what ran, how it ended, and the end of what it printed. */
function failedCheckEntry(check: CheckOutcome): string {
  const where = check.node ? ` (sub-SAM ${check.node})` : "";
  const how = check.timedOut ? "timed out" : `exit ${check.exitCode}`;
  const tail = check.output.trim().split("\n").slice(-20).join("\n");
  const fence = tail.includes("```") ? "~~~~" : "```";
  return `- ${check.id}${where}: ${how}: \`${check.command.trim()}\`\n  ${fence}text\n${tail
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n")}\n  ${fence}`;
}

/** The run is over: final review writes group and global suggestions, then the run ends. */
async function finish(ctx: RunContext, live: Live, deps: RunDeps, outcome: Outcome): Promise<Phase> {
  const { state, sam } = ctx;
  state.outcome = outcome;
  emit(deps, live, { phase: "final_review" });
  const taskMemory = readMemory(ctx.folder.files.memory);
  // No group, no group memory: a run without `group:` writes none.
  const group = sam.metadata.group;
  try {
    const suggestions = await runFinalReview(
      live.model,
      {
        runId: state.runId,
        title: sam.root.title,
        outcome: outcome.status,
        reason: outcome.reason,
        iterations: state.iteration,
        group: group ?? "(none)",
        taskMemory: { text: taskMemory, ref: `memory:task:${state.runId}`, sha256: sha256(taskMemory) },
        history: readHistory(ctx.folder.files.history)
          .slice(-40)
          .map((e) => JSON.stringify(e))
          .join("\n"),
        controlRank: sam.metadata.rank?.control ?? 1,
        meta: meta(ctx),
      },
      (response) => account(live, deps, response),
    );
    const paths = homePaths(ctx.home);
    const entry = (id: string, items: string[]) => ({
      id: `${state.runId}/final/${id}`,
      time: new Date().toISOString(),
      runId: state.runId,
      role: "final_review",
      title: `${sam.metadata.name}: ${outcome.status} after ${state.iteration} iteration(s)`,
      body: items.map((s) => `- ${s}`).join("\n"),
    });
    // A replay re-asks the recorded run's questions; its answers are already in shared memory.
    const replaying = live.model.memoryAsOf !== undefined;
    if (!replaying && group && suggestions.group_suggestions.length > 0) {
      await appendEntry(paths.groupMemory(group), entry("group", suggestions.group_suggestions));
    }
    // Global suggestions are proposals: only `scifi memory accept` puts one into global memory.
    if (!replaying && suggestions.global_suggestions.length > 0) {
      await appendEntry(paths.globalProposed, entry("global", suggestions.global_suggestions));
    }
    ctx.history.append({
      type: "final_review",
      groupSuggestions: suggestions.group_suggestions.length,
      globalSuggestions: suggestions.global_suggestions.length,
    });
  } catch (error) {
    // A record that cannot be written (full disk) stops the run where it is, resumable.
    if (error instanceof RecordWriteFailed) throw error;
    // A failed final review must not change the outcome of the task; it is recorded instead.
    ctx.history.append({
      type: "limit",
      iteration: state.iteration,
      limit: "final_review",
      detail: messageOf(error),
    });
  }
  return "final_review";
}

function endRun(ctx: RunContext, live: Live, outcome: Outcome): void {
  const { state } = ctx;
  state.outcome ??= outcome;
  ctx.history.append({
    type: "run_end",
    outcome: state.outcome.status,
    reason: state.outcome.reason,
    audit: live.audit.anchor(),
  });
  checkpoint(ctx, live, "ended");
}

function checkpoint(ctx: RunContext, live: Live, phase: Phase): void {
  const { state } = ctx;
  if (state.phase === "ended" && phase === "ended") return;
  state.phase = phase;
  state.spent = {
    tokens: live.budget.tokens,
    usd: live.budget.usd,
    elapsedMs: live.budget.elapsedMs(),
    at: new Date().toISOString(),
  };
  state.historyBytes = fileSize(ctx.folder.files.history);
  // The tape's head, anchored outside the tape: `audit verify` catches a dropped tail or a rewrite.
  state.auditHead = live.audit.anchor();
  writeState(ctx.folder.files.state, state);
}

/**
 * `approval: [finish]`: a person confirms the PASS (the run waits, no sandbox open). Returns the
 * failure reason when they deny it, undefined when confirmed or not required.
 */
async function confirmPass(ctx: RunContext, deps: RunDeps): Promise<string | undefined> {
  if (!deps.approval?.requires("finish")) return undefined;
  const checks = (ctx.state.checks ?? []).map((c) => `${c.passed ? "PASS" : "FAIL"} ${c.id}`);
  const answer = await deps.approval.ask({
    action: "finish",
    summary: `mark ${ctx.sam.metadata.name} passed after ${ctx.state.iteration} iteration(s)`,
    detail: [`checks: ${checks.join(", ") || "(none)"}`, `review: passed`].join("\n"),
  });
  if (answer.approved) return undefined;
  return `a person (${answer.decision.who}) did not confirm the PASS: ${answer.decision.note ?? "no reason given"}`;
}

/** A request or decision of the approval gate, on the history tape and the audit tape. */
function recordApproval(ctx: RunContext, live: Live, record: ApprovalRecord): void {
  const { request } = record;
  const decision = "decision" in record ? record.decision : undefined;
  ctx.history.append({
    type: "approval",
    iteration: ctx.state.iteration,
    id: request.id,
    action: request.action,
    state: record.state,
    summary: request.summary,
    ...(decision ? { who: decision.who, at: decision.time } : {}),
    ...(decision?.note ? { note: decision.note } : {}),
  });
  live.audit.append({
    kind: "event",
    event: `approval_${record.state}`,
    data: {
      id: request.id,
      action: request.action,
      summary: request.summary,
      why: request.why,
      ...(record.state === "requested" ? { detail: request.detail, deadline: request.deadline } : {}),
      ...(decision ? { who: decision.who, at: decision.time, note: decision.note ?? "" } : {}),
    },
  });
}

/** Errors that end the run with an outcome instead of crashing the process. */
function outcomeOfError(error: unknown): (Outcome & { limit: string }) | undefined {
  if (!(error instanceof Error)) return undefined;
  switch (error.name) {
    case "Tampering":
      return { status: "failed", reason: error.message, limit: "tampering" };
    case "BudgetExceeded":
      return { status: "failed", reason: `budget: ${error.message}`, limit: "budget" };
    case "SandboxLost":
      return { status: "failed", reason: `sandbox: ${error.message}`, limit: "sandbox", cause: "sandbox" };
    case "CopyTooLarge":
      return { status: "failed", reason: `checks: ${error.message}`, limit: "checks_copy" };
    case "GrantChanged":
    case "PolicyRefused":
      return { status: "failed", reason: `grant: ${error.message}`, limit: "grant" };
    case "NoModelAvailable":
      return { status: "failed", reason: `no model: ${error.message}`, limit: "model" };
    case "ApprovalTimedOut":
    case "DeleteGuardTooLarge":
      return { status: "blocked", reason: error.message, limit: "approval" };
    case "MalformedReply":
    case "ReviewFailed":
    case "ScriptError":
      return { status: "failed", reason: error.message, limit: "agent_reply" };
    default:
      return undefined;
  }
}

function failureReason(state: RunState): string {
  const failed = (state.checks ?? [])
    .filter((c) => !c.passed)
    .map((c) => (c.node ? `${c.id} (sub-SAM ${c.node})` : c.id));
  const items = (state.verdict?.items ?? []).filter((i) => !i.pass).map((i) => i.id);
  const parts = [];
  if (failed.length) parts.push(`failed checks: ${failed.join(", ")}`);
  if (items.length) parts.push(`review failed items: ${items.join(", ")}`);
  if (state.work && state.work.exit !== "done") parts.push(`work pass ended: ${state.work.exit}`);
  return parts.join("; ") || "review did not pass";
}

function exitReason(exit: PassExit): string {
  switch (exit.type) {
    case "done":
      return exit.claim;
    case "blocker":
      return exit.reason;
    case "answer":
      return "answered";
    default:
      return exit.reason;
  }
}

function onPassEvent(ctx: RunContext, live: Live, deps: RunDeps, event: PassEvent): void {
  if (event.type === "limit") {
    ctx.history.append({
      type: "limit",
      iteration: ctx.state.iteration,
      limit: event.limit,
      detail: event.detail,
    });
  } else if (event.type === "step") {
    emit(deps, live, {
      step: event.step,
      stepsLeft: event.limits.stepsLeft(),
      toolCallsLeft: event.limits.toolCallsLeft(),
    });
  } else if (event.type === "tool") {
    emit(deps, live, {
      toolCalls: event.limits.toolCalls,
      lastTool: `${event.name}${event.ok ? "" : " (failed)"}`,
    });
  } else {
    emit(deps, live, { tokens: live.budget.tokens, usd: live.budget.usd });
  }
}

function account(live: Live, deps: RunDeps, response: ModelResponse): void {
  live.budget.add(totalTokens(response), response.costUsd);
  emit(deps, live, { tokens: live.budget.tokens, usd: live.budget.usd });
}

function emit(deps: RunDeps, live: Live, patch: Partial<RunStatus>): void {
  Object.assign(live.status, patch, { elapsedMs: live.budget.elapsedMs() });
  deps.onStatus?.({ ...live.status });
}

function initialStatus(ctx: RunContext, limits: LimitConfig): RunStatus {
  return {
    runId: ctx.state.runId,
    iteration: ctx.state.iteration,
    phase: ctx.state.phase,
    node: ctx.state.plan?.node,
    step: 0,
    toolCalls: 0,
    tokens: ctx.state.spent.tokens,
    usd: ctx.state.spent.usd,
    elapsedMs: ctx.state.spent.elapsedMs,
    stepsLeft: limits.stepsPerPass,
    toolCallsLeft: limits.toolCallsPerPass,
    limits,
  };
}

function meta(ctx: RunContext): ModelRequest["meta"] {
  return {
    runId: ctx.state.runId,
    iteration: ctx.state.iteration,
    sam: { file: ctx.sam.file, sha256: ctx.sam.sha256 },
  };
}

function hiddenCount(ctx: RunContext): number {
  return ctx.state.pristine.files.filter((f) => f.hidden).length;
}

function requirePlan(state: RunState): PrescanPlan {
  if (!state.plan)
    throw new Error(`run ${state.runId}: phase ${state.phase} has no plan (corrupt state.json?)`);
  return state.plan;
}

function requireNode(root: SamNode, id: string): SamNode {
  const node = findNode(root, id);
  if (!node) throw new Error(`SAM has no node '${id}'`);
  return node;
}

/**
 * Spend at the last checkpoint, brought up to what the tape says: its calls' money and tokens, and
 * the time the dead process ran after the checkpoint (up to its last record).
 */
function spentSince(spent: RunState["spent"], tape: TapeSpent): RunState["spent"] {
  const ranOn = spent.at && tape.lastTime ? Math.max(0, Date.parse(tape.lastTime) - Date.parse(spent.at)) : 0;
  return {
    usd: Math.max(spent.usd, tape.usd),
    tokens: Math.max(spent.tokens, tape.tokens),
    elapsedMs: spent.elapsedMs + ranOn,
    ...(spent.at ? { at: spent.at } : {}),
  };
}

/** SAM files and check assets, relative to the (real) task folder; hidden assets marked. */
function pristineRequests(sam: SamDocument, taskDir: string): PristineRequest[] {
  const samDir = dirname(sam.file);
  const rel = (file: string) => relative(taskDir, realpathSync(file)).split("\\").join("/");
  const hidden = new Set((sam.metadata.hiddenAssets ?? []).map((a) => rel(resolve(samDir, a))));
  return [
    ...sam.files.map((f) => ({ rel: rel(f.file), kind: "sam" as const, hidden: false })),
    ...sam.metadata.checkAssets.map((a) => {
      const path = rel(resolve(samDir, a));
      return { rel: path, kind: "asset" as const, hidden: hidden.has(path) };
    }),
  ];
}

export function rankRange(sam: SamDocument): { min: number; max: number } {
  const hint = sam.metadata.rank?.work;
  return hint === undefined ? { min: 1, max: 3 } : { min: Math.max(1, hint - 1), max: hint + 1 };
}

function clampRank(rank: number, range: { min: number; max: number }): number {
  return Math.min(range.max, Math.max(range.min, rank));
}

/** Defaults, overridden by options, then by what the SAM itself requests. */
export function effectiveLimits(sam: SamDocument, overrides: Partial<LimitConfig> = {}): LimitConfig {
  const m = sam.metadata;
  return {
    ...DEFAULT_LIMITS,
    ...overrides,
    ...(m.iterations !== undefined ? { iterations: m.iterations } : {}),
    ...(m.walltimeSec !== undefined ? { walltimeSec: m.walltimeSec } : {}),
    ...(m.budgetUsd !== undefined ? { usd: m.budgetUsd } : {}),
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export { readyNodes };
