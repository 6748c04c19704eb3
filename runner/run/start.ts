// Starting and resuming a run: both compose the same records (run folder, state, history) and the
// same session, then hand it to the driver. A start copies what the verdict depends on before any
// agent runs and writes the first checkpoint; a resume brings the spend up to what the tape says,
// cuts the history back to the last checkpoint and hides the hidden assets again.
import { spentOnTape, type TapeSpent } from "../audit/spent.ts";
import { AuditTape } from "../audit/tape.ts";
import { cutBack, fileSize, HistoryTape, readHistory } from "../memory/history.ts";
import { measureTaskFolder } from "../policy/host-paths.ts";
import { appliedProposals } from "../run-folder/evolve-applied.ts";
import {
  createRunFolder,
  openRunFolder,
  type RunFolder,
  readSamJson,
  readSpecJson,
} from "../run-folder/folder.ts";
import { type RunState, readState, writeState } from "../run-folder/state.ts";
import { assetsSinceLastRun } from "./checks/last-assets.ts";
import { drive } from "./driver.ts";
import type { RunRecords } from "./session/context.ts";
import { RunControl } from "./session/control.ts";
import type { RunDeps, RunResult, StartOptions } from "./session/deps.ts";
import { runLimits } from "./session/limits.ts";
import { clampRank, effectiveLimits, rankRange } from "./session/sam-limits.ts";
import { RunSession } from "./session/session.ts";
import { hideAssets } from "./task-folder/pristine.ts";
import { lockRun, lockTaskFolder } from "./task-folder/run-lock.ts";
import { TaskFolderGuard, takePristine } from "./task-folder/task-folder.ts";

/** Start a new run of a parsed SAM. */
export async function startRun(options: StartOptions, deps: RunDeps): Promise<RunResult> {
  const { runId, sam } = options;
  const spec = await deps.resolveSpec(sam, runId);
  await deps.preflight?.();
  // Before anything is written: a folder another run uses is refused (TaskFolderBusy).
  const releaseFolder = lockTaskFolder(options.home, spec.taskDir, runId);
  let unlock = releaseFolder;
  try {
    const folder = createRunFolder(options.home, runId, sam, spec);
    const unlockRun = lockRun(folder, runId);
    unlock = () => {
      unlockRun();
      releaseFolder();
    };
    deps.onCreated?.(folder.dir);
    const limits = effectiveLimits(sam, options.limits);
    const pristine = takePristine(sam, spec.taskDir, folder.files.pristine);
    // The task-folder quota counts what the whole run adds to what the folder held at start.
    const { allocatedBytes } = await measureTaskFolder(spec.taskDir);
    const state: RunState = {
      version: 1,
      runId,
      samFile: sam.file,
      samSha256: sam.sha256,
      samFiles: sam.files,
      pristine,
      taskFolderBaseBytes: allocatedBytes,
      backend: deps.backend.name,
      ...(options.model ? { model: options.model } : {}),
      phase: "created",
      iteration: 0,
      attempts: {},
      completeNodes: [],
      workRank: clampRank(sam.metadata.rank?.work ?? 1, rankRange(sam)),
      // `at`: when the clock started, so `scifi ctl` can tell the time used before the first phase ends.
      spent: { tokens: 0, usd: 0, elapsedMs: 0, at: new Date().toISOString() },
      limits,
      historyBytes: 0,
      resumes: 0,
      ...(deps.sitePolicyFile ? { sitePolicyFile: deps.sitePolicyFile } : {}),
      ...(options.startedBy ? { startedBy: options.startedBy } : {}),
    };
    // Which applied evolve proposals (ranks, prompts, memory) this run ran under, for its report.
    const applied = appliedProposals(options.home, new Date());
    if (applied.length > 0) state.evolve = applied;
    const history = new HistoryTape(folder.files.history);
    history.append({ type: "run_start", sam: sam.file, sha256: sam.sha256, backend: deps.backend.name });
    const changed = assetsSinceLastRun(options.home, spec.taskDir, runId, pristine);
    if (changed) history.append({ type: "assets_changed", iteration: 0, ...changed });
    for (const extension of deps.extensions ?? []) extension.onHistory?.((event) => history.append(event));
    // First checkpoint before anything can fail, so even a run killed while starting can be resumed.
    state.historyBytes = fileSize(folder.files.history);
    writeState(folder.files.state, state);
    return await runSession({ home: options.home, folder, sam, spec, state, limits, history }, deps);
  } finally {
    unlock();
  }
}

/** Continue a run whose process died, from its last completed phase, with a fresh sandbox. */
export async function resumeRun(home: string, runId: string, deps: RunDeps): Promise<RunResult> {
  const folder = openRunFolder(home, runId);
  // Before anything is read or cut back: a run still driven by a live process is refused.
  const unlock = lockRun(folder, runId);
  try {
    const releaseFolder = lockTaskFolder(home, readSpecJson(folder).taskDir, runId);
    try {
      return await resumeLocked(home, runId, deps, folder);
    } finally {
      releaseFolder();
    }
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
  if (!state.pristine) {
    throw new Error(
      `run ${runId} was started by an older scifi without pristine copies of its check assets; start the task again`,
    );
  }
  if (state.outcome && state.phase === "ended") return resultOf(folder, state);
  // Money, tokens and time as the tape has them: every call was written before it returned, so the
  // tape knows what the dead process spent after its last checkpoint; the state may not.
  state.spent = spentSince(state.spent, spentOnTape(folder.files.audit));
  // Events of the interrupted phase were never checkpointed: cut them so nothing is duplicated.
  const before = readHistory(folder.files.history);
  cutBack(folder.files.history, state.historyBytes);
  const history = new HistoryTape(folder.files.history);
  const discarded = before.length - history.length;
  // ...but what the runner blocked is evidence (trust.md rule 15): those events come back after the resume.
  const blocked = before.slice(history.length).filter((e) => e.type === "integrity");
  state.resumes++;
  // The policy this resume runs under is the one `scifi ctl` judges against from now on.
  if (deps.sitePolicyFile) state.sitePolicyFile = deps.sitePolicyFile;
  else delete state.sitePolicyFile;
  // A paused run continues: the pause was taken (its decision applied), the run drives on; the
  // `scifi ctl <run> resume` decision, if that is how it came back, goes on the history as the
  // control polls it.
  delete state.paused;
  // The recorded spec is evidence, never input: every sandbox start resolves the grant again and
  // compares it with this (grant.ts).
  const spec = readSpecJson(folder);
  // A run killed during its checks left its hidden assets in the task folder.
  hideAssets(spec.taskDir, state.pristine);
  history.append({
    type: "resumed",
    fromPhase: state.phase,
    iteration: state.iteration,
    discardedEvents: discarded,
  });
  for (const { seq: _seq, time: _time, ...event } of blocked) history.append(event);
  for (const extension of deps.extensions ?? []) extension.onHistory?.((event) => history.append(event));
  const audit = new AuditTape(folder.files.audit, { runId });
  audit.append({
    kind: "event",
    event: "resumed",
    data: { fromPhase: state.phase, iteration: state.iteration, resumes: state.resumes },
  });
  audit.close();
  return runSession({ home, folder, sam, spec, state, limits: state.limits, history }, deps);
}

/**
 * Opens the live pieces (tape, gateway, the run's limits, its control), drives the run, and closes
 * them, the hidden assets going back into the task folder whatever happened.
 */
async function runSession(records: RunRecords, deps: RunDeps): Promise<RunResult> {
  const { state } = records;
  // The run's clock, purse and stop: one owner each, made here once and handed to every phase. The
  // limits are the state's own object, so a change (scifi ctl) is checkpointed with it.
  const limits = runLimits(records.limits, state.spent, deps.signal);
  const control = new RunControl(records.folder.files.control, state, records.history, limits);
  const audit = new AuditTape(records.folder.files.audit, { runId: state.runId });
  const taskFolder = new TaskFolderGuard(records);
  let model: RunSession["model"] | undefined;
  // Wall time is also enforced inside the sandbox: at the deadline every running command (a tool
  // call, a check) and model call is aborted, whatever the agent's files do, and the run ends.
  limits.clock.start();
  try {
    // Decisions made while no process drove the run (a paused run's new limits) apply first.
    control.start();
    // One count of money and tokens: the gateway charges the run's purse and checks its caps before
    // every call (every role), starting from what the run has really spent, earlier processes included.
    model = await deps.openModel(audit, {
      purse: limits.purse,
      deadline: () => limits.clock.deadline(),
      signal: limits.stop.signal,
    });
    const session = new RunSession(records, deps, { model, limits, audit, taskFolder, control });
    session.emit({});
    session.gates.attach();
    for (const extension of deps.extensions ?? [])
      extension.onAudit?.((event, data) => audit.append({ kind: "event", event, data }));
    await drive(session);
  } finally {
    control.stop();
    limits.clock.stop();
    state.spent = { tokens: limits.purse.tokens, usd: limits.purse.usd, elapsedMs: limits.clock.elapsedMs() };
    await model?.close().catch(() => undefined);
    audit.close();
    // Every exit: nothing of the agent's still runs, the SAM files and assets are compared and put
    // back (tampering recorded), and only then are the hidden assets back in the user's task folder.
    const ended = await endAgentWorkAtExit(records, deps);
    taskFolder.restoreAtEnd();
    if (ended) taskFolder.returnHidden();
  }
  return resultOf(records.folder, state);
}

/**
 * The agent's jobs ended before the hidden assets go back. False when some are still alive: the
 * hidden assets then stay in the run folder's pristine copies (said on the history), out of reach.
 */
async function endAgentWorkAtExit(records: RunRecords, deps: RunDeps): Promise<boolean> {
  let ended = true;
  for (const extension of deps.extensions ?? []) {
    const alive = await extension
      .endAgentWork?.("the run is ending")
      .catch((error: unknown) => [String(error)]);
    if (alive && alive.length > 0) {
      records.history.append({
        type: "limit",
        iteration: records.state.iteration,
        limit: "jobs",
        detail: `jobs of the agent still running at the end of the run (${alive.join(", ")}): the hidden assets stay in ${records.folder.files.pristine} until they are gone`,
      });
      ended = false;
    }
  }
  return ended;
}

function resultOf(folder: RunFolder, state: RunState): RunResult {
  return {
    runId: state.runId,
    dir: folder.dir,
    outcome: state.outcome ?? { status: "failed", reason: "the run stopped without an outcome" },
    ...(state.paused && !state.outcome ? { paused: state.paused } : {}),
    iterations: state.iteration,
    spent: state.spent,
  };
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
