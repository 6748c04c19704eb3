// One trial of an eval: a normal scifi run (runner/run/setup.ts runTask, the one wiring path of
// `scifi run`: same sandbox, checks and tape) of one variant of one task with one model, on a fresh
// copy of the task folder under `evals/<id>/trials/<trial>/<task>/`. When the run ends (or cannot
// run), its result.json (runner/eval/trial-result.ts) is written atomically; that file is the only
// thing the eval counts, so a killed eval loses at most the trials that were running. The same
// function runs a trial in the eval's process and, with `--slurm`, inside a SLURM job.

import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeJsonAtomic } from "../atomic-write.ts";
import { exitCodeOfOutcome } from "../exit-codes.ts";
import { readHistory } from "../memory/history.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import type { RunResult } from "../run/session/deps.ts";
import type { RunStatus } from "../run/session/status.ts";
import { refuseBusyTaskFolder } from "../task-folder-lock.ts";
import {
  type AttemptOwner,
  earlierAttempts,
  paidUsd,
  readAttempts,
  recordAttempt,
  tapeFacts,
} from "./attempts.ts";
import { type Bookkeeping, emptyBookkeeping, timePart, timePartAsync } from "./bookkeeping.ts";
import { type EvalPlan, evalFiles, type PlannedTrial, specOf } from "./plan.ts";
import { DEFAULT_VARIANT } from "./suite.ts";
import { expectedCopy, firstDifference, taskFiles } from "./task-files.ts";
import { type TrialResult, trialResultSchema } from "./trial-result.ts";

export interface TrialOptions {
  home: string;
  evalDir: string;
  plan: EvalPlan;
  trial: PlannedTrial;
  /** Shorter model retries (tests, the bench). */
  retry?: { maxRetries?: number; baseDelayMs?: number; maxDelayMs?: number; timeoutMs?: number };
  /** The run's live status (tests use it to act on a trial while it runs). */
  onStatus?: (status: RunStatus) => void;
  /** Told the time the trial spent outside its run, by part (bookkeeping.ts): the bench. */
  onBookkeeping?: (parts: Bookkeeping) => void;
}

/** Runs one trial to its end and writes its result.json; never throws for the run's own errors. */
export async function runTrial(o: TrialOptions): Promise<TrialResult> {
  const { plan, trial } = o;
  const parts = emptyBookkeeping();
  // A run that ended before a kill took the eval (no result.json yet) is that trial's run: kept.
  const kept = timePart(parts, "resume", () => recoverFinished(o));
  if (kept) return kept;
  const startedAt = new Date();
  let taskDir: string;
  try {
    taskDir = await timePartAsync(parts, "copy", () => freshCopy(o));
  } catch (error) {
    if (!(error instanceof TaskFolderChanged)) throw error;
    const record = trialRecord(o, {
      result: undefined,
      failure: error,
      runId: "",
      runDir: "",
      startedAt,
      endedAt: new Date(),
    });
    writeTrialResult(o.evalDir, record);
    return record;
  }
  const { runTask } = await import("../run/setup.ts");
  let runId = "";
  let runDir = "";
  let result: RunResult | undefined;
  let failure: unknown;
  try {
    result = await runTask({
      home: o.home,
      task: join(taskDir, "task.md"),
      backend: plan.backend,
      model: specOf(plan, trial),
      // The limits eval.json records for the task (an older plan: the suite's, as then).
      limits: plan.tasks.find((t) => t.name === trial.task)?.limits ?? plan.limits,
      ...(o.retry ? { retry: o.retry } : {}),
      ...(o.onStatus ? { onStatus: o.onStatus } : {}),
      // The eval reads the outcome and never resumes the run: it takes no pause, and its limits are
      // the plan's (scifi ctl refuses both; the run refuses a decision file on its history).
      startedBy: { tool: "eval", evalId: plan.evalId, trialId: trial.trialId },
      onRunId: (id, dir) => {
        runId = id;
        runDir = dir;
        recordAttempt(o.evalDir, trial.trialId, {
          runId: id,
          runDir: dir,
          startedAt: startedAt.toISOString(),
        });
      },
    });
  } catch (error) {
    failure = error;
  }
  const endedAt = new Date();
  const record = timePart(parts, "record", () => {
    const made = trialRecord(o, { result, failure, runId, runDir, startedAt, endedAt });
    writeTrialResult(o.evalDir, made);
    return made;
  });
  o.onBookkeeping?.(parts);
  return record;
}

/**
 * The result of a trial whose last run ended (its state holds an outcome) without a result.json
 * naming it: the eval was killed after the run's end and before its record. Undefined otherwise.
 */
export function recoverFinished(o: TrialOptions): TrialResult | undefined {
  const last = readAttempts(o.evalDir, o.trial.trialId, attemptOwner(o.home, o.evalDir, o.trial)).at(-1);
  if (!last) return undefined;
  // Only a run newer than the result there (an error being retried) is the trial's unrecorded end.
  const current = readTrialResult(o.evalDir, o.trial.trialId);
  if (current && (current.runId === last.runId || Date.parse(current.endedAt) >= Date.parse(last.startedAt)))
    return undefined;
  const { state } = last;
  if (!state.outcome) return undefined;
  const record = trialRecord(o, {
    result: {
      runId: last.runId,
      dir: last.runDir,
      outcome: state.outcome,
      iterations: state.iteration,
      spent: state.spent,
    },
    failure: undefined,
    runId: last.runId,
    runDir: last.runDir,
    startedAt: new Date(last.startedAt),
    endedAt: last.stateWrittenAt,
  });
  writeTrialResult(o.evalDir, record);
  return record;
}

/** Whose runs are this trial's (attempts.ts): the home's runs started from the trial's own copy. */
export function attemptOwner(home: string, evalDir: string, trial: PlannedTrial): AttemptOwner {
  return { home, samFile: join(evalFiles(evalDir).copy(trial.trialId, trial.task), "task.md") };
}

/** Writes a trial's result.json atomically, checked against the contract first. */
export function writeTrialResult(evalDir: string, result: TrialResult): void {
  writeJsonAtomic(evalFiles(evalDir).result(result.trialId), trialResultSchema.parse(result), {
    mode: 0o644,
  });
}

/** The trial's result.json, or undefined when the trial has none (not run, or unfinished). */
export function readTrialResult(evalDir: string, trialId: string): TrialResult | undefined {
  const file = evalFiles(evalDir).result(trialId);
  if (!existsSync(file)) return undefined;
  const parsed = trialResultSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
  if (!parsed.success)
    throw new Error(
      `${file} is not a trial result (${parsed.error.issues[0]?.message}); delete it to run the trial again`,
    );
  return parsed.data;
}

/** The trial's copy differs from the task folder the plan recorded: the folder changed meanwhile. */
export class TaskFolderChanged extends Error {
  override name = "TaskFolderChanged";
}

/**
 * A fresh copy of the task folder for this trial, with only the trial's variant in it, as task.md
 * (the other variants' texts must not be readable by an agent given a shorter one). A copy left
 * by an unfinished attempt is removed first. The copy is then compared with the folder the plan
 * recorded (task-files.ts): a trial is judged by what its siblings were judged by, or not at all.
 */
async function freshCopy(o: TrialOptions): Promise<string> {
  const task = o.plan.tasks.find((t) => t.name === o.trial.task);
  const variant = task?.variants.find((v) => v.name === o.trial.variant);
  if (!task || !variant) throw new Error(`trial ${o.trial.trialId}: its task or variant is not in the plan`);
  // A run started on the folder since the eval began: its trials would copy the run's half-work.
  refuseBusyTaskFolder(o.home, task.dir);
  mkdirSync(evalFiles(o.evalDir).trial(o.trial.trialId), { recursive: true });
  const copy = evalFiles(o.evalDir).copy(o.trial.trialId, task.name);
  // An earlier attempt's copy goes; its result.json (an error being retried) stays until replaced.
  rmSync(copy, { recursive: true, force: true });
  cpSync(task.dir, copy, { recursive: true, verbatimSymlinks: true, errorOnExist: true });
  const chosen = o.trial.variant === DEFAULT_VARIANT ? undefined : `task.${variant.name}.md`;
  // Every other description of the task goes, also the levels this eval does not run (and the
  // folder's own task.md when a level is chosen): an agent given the short description must not
  // read the long one beside it.
  for (const name of readdirSync(copy))
    if (/^task\.[^.]+\.md$/.test(name) && name !== chosen) rmSync(join(copy, name), { force: true });
  if (chosen) renameSync(join(copy, chosen), join(copy, "task.md"));
  if (task.files) {
    const difference = firstDifference(expectedCopy(task.files, chosen), await taskFiles(copy));
    if (difference)
      throw new TaskFolderChanged(
        `the task folder ${task.dir} changed since the eval started: ${difference}; its trials would not be judged alike (restore it, or start a new eval)`,
      );
  }
  return copy;
}

interface Ended {
  result: RunResult | undefined;
  failure: unknown;
  runId: string;
  runDir: string;
  startedAt: Date;
  endedAt: Date;
}

/** The result.json of a trial from its run's records (state outcome, history, audit tape). */
function trialRecord(o: TrialOptions, e: Ended): TrialResult {
  const model = o.plan.models.find((m) => m.label === o.trial.model);
  const history = e.runDir ? readHistory(join(e.runDir, "history.jsonl")) : [];
  const tape = e.runDir ? tapeFacts(join(e.runDir, "audit.jsonl")) : undefined;
  const earlier = earlierAttempts(
    readAttempts(o.evalDir, o.trial.trialId, attemptOwner(o.home, o.evalDir, o.trial)),
    e.runId,
  );
  const { status, verdict, exitCode, cause } = ending(e.result, e.failure);
  const tokens = tape?.tokens ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  const inputSide = tokens.input + tokens.cacheRead + tokens.cacheWrite;
  return {
    version: 1,
    evalId: o.plan.evalId,
    trialId: o.trial.trialId,
    task: o.trial.task,
    variant: o.trial.variant,
    model: o.trial.model,
    scripted: model?.scripted ?? false,
    repeat: o.trial.repeat,
    status,
    verdict,
    exitCode,
    cause,
    iterations: e.result?.iterations ?? iterationsOf(history),
    wallMs: e.endedAt.getTime() - e.startedAt.getTime(),
    tokens,
    cacheReadShare: inputSide > 0 ? tokens.cacheRead / inputSide : 0,
    usd: (e.result?.spent.usd ?? tape?.usd ?? 0) + paidUsd(earlier),
    ...(earlier.length > 0 ? { earlier } : {}),
    toolCalls: sum(history, (r) => (r.type === "work_end" ? r.toolCalls : 0)),
    toolRejections: sum(history, (r) => (r.type === "limit" && r.limit === "tool_call" ? 1 : 0)),
    approvalsWaited: sum(history, (r) => (r.type === "approval" && r.state === "requested" ? 1 : 0)),
    integrity: integrityByKind(history),
    runId: e.result?.runId ?? e.runId,
    runDir: e.result?.dir ?? e.runDir,
    ...(tape?.head ? { tapeHead: tape.head } : {}),
    startedAt: e.startedAt.toISOString(),
    endedAt: e.endedAt.toISOString(),
  };
}

/** The run's integrity events, counted by kind. */
function integrityByKind(history: readonly HistoryRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of history) if (r.type === "integrity") counts[r.kind] = (counts[r.kind] ?? 0) + 1;
  return counts;
}

/**
 * pass, fail or error. A sandbox that died under the run (outcome cause `sandbox`, exit 4), models
 * that were all asked and none answered (cause `model`: an outage, a bad key) and a run that
 * stopped without an outcome (it threw: no sandbox, a crash, a bad script) are infrastructure
 * errors, counted apart from the task's failures.
 */
function ending(
  result: RunResult | undefined,
  failure: unknown,
): Pick<TrialResult, "status" | "verdict" | "exitCode" | "cause"> {
  // A person paused the trial's run (scifi ctl): no verdict yet, not the task's failure.
  if (result?.paused)
    return {
      status: "error",
      verdict: "ERROR",
      exitCode: 5,
      cause: `paused after phase ${result.paused.phase}`,
    };
  if (result) {
    const exitCode = exitCodeOfOutcome(result.outcome);
    const { status, reason } = result.outcome;
    if (result.outcome.cause !== undefined)
      return { status: "error", verdict: "ERROR", exitCode, cause: reason };
    return {
      status: status === "passed" ? "pass" : "fail",
      verdict: status.toUpperCase(),
      exitCode,
      cause: reason,
    };
  }
  const message = failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure);
  return { status: "error", verdict: "ERROR", exitCode: 1, cause: message };
}

function iterationsOf(history: HistoryRecord[]): number {
  return history.filter((r) => r.type === "iteration_start").length;
}

function sum(history: HistoryRecord[], value: (r: HistoryRecord) => number): number {
  let total = 0;
  for (const r of history) total += value(r);
  return total;
}
