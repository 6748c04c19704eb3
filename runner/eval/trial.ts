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
import type { RunResult } from "../run/deps.ts";
import type { RunStatus } from "../run/status.ts";
import { type EvalPlan, evalFiles, type PlannedTrial, specOf } from "./plan.ts";
import { DEFAULT_VARIANT } from "./suite.ts";
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
  /** Told the milliseconds the trial spent outside its run (copy, records, result.json): the bench. */
  onBookkeeping?: (ms: number) => void;
}

/** Runs one trial to its end and writes its result.json; never throws for the run's own errors. */
export async function runTrial(o: TrialOptions): Promise<TrialResult> {
  const { plan, trial } = o;
  const startedAt = new Date();
  const t0 = performance.now();
  const taskDir = freshCopy(o);
  let bookkeeping = performance.now() - t0;
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
      limits: plan.limits,
      ...(o.retry ? { retry: o.retry } : {}),
      ...(o.onStatus ? { onStatus: o.onStatus } : {}),
      onRunId: (id, dir) => {
        runId = id;
        runDir = dir;
      },
    });
  } catch (error) {
    failure = error;
  }
  const t1 = performance.now();
  const record = trialRecord(o, { result, failure, runId, runDir, startedAt, endedAt: new Date() });
  writeTrialResult(o.evalDir, record);
  bookkeeping += performance.now() - t1;
  o.onBookkeeping?.(bookkeeping);
  return record;
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

/**
 * A fresh copy of the task folder for this trial, with only the trial's variant in it, as task.md
 * (the other variants' texts must not be readable by an agent given a shorter one). A copy left
 * by an unfinished attempt is removed first.
 */
function freshCopy(o: TrialOptions): string {
  const task = o.plan.tasks.find((t) => t.name === o.trial.task);
  const variant = task?.variants.find((v) => v.name === o.trial.variant);
  if (!task || !variant) throw new Error(`trial ${o.trial.trialId}: its task or variant is not in the plan`);
  const trialDir = evalFiles(o.evalDir).trial(o.trial.trialId);
  mkdirSync(trialDir, { recursive: true });
  const copy = join(trialDir, task.name);
  // An earlier attempt's copy goes; its result.json (an error being retried) stays until replaced.
  rmSync(copy, { recursive: true, force: true });
  cpSync(task.dir, copy, { recursive: true, verbatimSymlinks: true, errorOnExist: true });
  if (o.trial.variant !== DEFAULT_VARIANT) {
    // Every other description of the task goes, also the levels this eval does not run: an agent
    // given the short description must not read the long one beside it.
    const chosen = `task.${variant.name}.md`;
    for (const name of readdirSync(copy))
      if (/^task\.[^.]+\.md$/.test(name) && name !== chosen) rmSync(join(copy, name), { force: true });
    renameSync(join(copy, `task.${variant.name}.md`), join(copy, "task.md"));
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
    usd: e.result?.spent.usd ?? tape?.usd ?? 0,
    toolCalls: sum(history, (r) => (r.type === "work_end" ? r.toolCalls : 0)),
    toolRejections: sum(history, (r) => (r.type === "limit" && r.limit === "tool_call" ? 1 : 0)),
    approvalsWaited: sum(history, (r) => (r.type === "approval" && r.state === "requested" ? 1 : 0)),
    runId: e.result?.runId ?? e.runId,
    runDir: e.result?.dir ?? e.runDir,
    ...(tape?.head ? { tapeHead: tape.head } : {}),
    startedAt: e.startedAt.toISOString(),
    endedAt: e.endedAt.toISOString(),
  };
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

/**
 * Tokens by kind, cost and the head of a tape, read line by line (each call record carries its
 * usage and cost inline; the requests are not rebuilt, which readTape would do).
 */
function tapeFacts(
  path: string,
): { tokens: TrialResult["tokens"]; usd: number; head: string | undefined } | undefined {
  if (!existsSync(path)) return undefined;
  const tokens = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  let usd = 0;
  let head: string | undefined;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line === "") continue;
    let record: { kind?: string; usage?: Partial<typeof tokens>; costUsd?: number; hash?: string };
    try {
      record = JSON.parse(line);
    } catch {
      continue; // a line cut by a crash: the run's own verify reports it
    }
    if (typeof record.hash === "string") head = record.hash;
    if (record.kind !== "call" || !record.usage) continue;
    tokens.input += record.usage.input ?? 0;
    tokens.output += record.usage.output ?? 0;
    tokens.cacheRead += record.usage.cacheRead ?? 0;
    tokens.cacheWrite += record.usage.cacheWrite ?? 0;
    usd += record.costUsd ?? 0;
  }
  return { tokens, usd, head };
}
