// Every run a trial started: `evals/<id>/trials/<trial>/attempts.jsonl`, one line appended when the
// run gets its id (before it asks any model). It is what lets a trial account for all it cost and
// lets a resume keep a finished run:
// - an attempt whose run ended (its state.json holds an outcome) but whose result.json was never
//   written (the eval was killed between the two) is not run again: its result is made from the
//   run's records (recoverFinished);
// - an attempt that ended in an `error` and was retried, or that a kill cut short, was paid for:
//   the trial's `usd` includes it, and its result lists it under `earlier`.
// The tape is what the provider was paid by (every call record carries its cost).
import { appendFileSync, existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { RunState } from "../run-folder/state.ts";
import { evalFiles } from "./plan.ts";
import type { TrialResult } from "./trial-result.ts";

export interface Attempt {
  runId: string;
  runDir: string;
  startedAt: string;
}

export type EarlierAttempt = NonNullable<TrialResult["earlier"]>[number];

const attemptsFile = (evalDir: string, trialId: string) =>
  join(evalFiles(evalDir).trial(trialId), "attempts.jsonl");

export function recordAttempt(evalDir: string, trialId: string, attempt: Attempt): void {
  appendFileSync(attemptsFile(evalDir, trialId), `${JSON.stringify(attempt)}\n`, { mode: 0o644 });
}

/** Whose runs count: the home's runs folder, and the SAM file of this trial's copy. */
export interface AttemptOwner {
  home: string;
  /** `evals/<id>/trials/<trial>/<task>/task.md`: what the trial's runs start from. */
  samFile: string;
}

/** An attempt that is this trial's run, with its state as read (once) and when it was written. */
export interface OwnAttempt extends Attempt {
  state: RunState;
  stateWrittenAt: Date;
}

/**
 * The trial's attempts, oldest first, each run once. A line counts only for a run of this trial:
 * a folder `<home>/runs/<runId>` whose state names this trial's copy as its SAM file. A stale or
 * copied line (another trial's run, a folder elsewhere) and a line a kill cut short are skipped;
 * so is a run killed before its first checkpoint (no state: it had asked no model).
 */
export function readAttempts(evalDir: string, trialId: string, owner: AttemptOwner): OwnAttempt[] {
  const file = attemptsFile(evalDir, trialId);
  if (!existsSync(file)) return [];
  const out: OwnAttempt[] = [];
  const seen = new Set<string>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line === "") continue;
    let a: Partial<Attempt>;
    try {
      a = JSON.parse(line) as Partial<Attempt>;
    } catch {
      continue; // torn by a kill
    }
    if (typeof a.runId !== "string" || typeof a.startedAt !== "string" || seen.has(a.runId)) continue;
    if (!/^[A-Za-z0-9._-]{1,200}$/.test(a.runId) || typeof a.runDir !== "string") continue;
    if (resolve(a.runDir) !== resolve(owner.home, "runs", a.runId)) continue;
    const read = readState(a.runDir);
    if (typeof read?.state.samFile !== "string" || resolve(read.state.samFile) !== resolve(owner.samFile))
      continue;
    seen.add(a.runId);
    out.push({ runId: a.runId, runDir: a.runDir, startedAt: a.startedAt, ...read });
  }
  return out;
}

function readState(runDir: string): { state: RunState; stateWrittenAt: Date } | undefined {
  const file = join(runDir, "state.json");
  if (!existsSync(file)) return undefined;
  try {
    return {
      state: JSON.parse(readFileSync(file, "utf8")) as RunState,
      stateWrittenAt: statSync(file).mtime,
    };
  } catch {
    return undefined; // torn
  }
}

/**
 * The attempts before the current one, each with what its tape says it cost and how it ended:
 * `error` when its run has an outcome (only an error result is ever retried), else `interrupted`.
 */
export function earlierAttempts(attempts: OwnAttempt[], currentRunId: string): EarlierAttempt[] {
  const seen = new Set<string>([currentRunId]);
  return attempts
    .filter((a) => !seen.has(a.runId) && seen.add(a.runId) !== undefined)
    .map((a) => ({
      runId: a.runId,
      usd: tapeFacts(join(a.runDir, "audit.jsonl"))?.usd ?? 0,
      ending: a.state.outcome ? ("error" as const) : ("interrupted" as const),
      cause: a.state.outcome?.reason ?? "the eval was stopped while this attempt ran",
    }));
}

/** What the earlier attempts cost together. */
export function paidUsd(earlier: EarlierAttempt[]): number {
  return earlier.reduce((sum, a) => sum + a.usd, 0);
}

/**
 * Tokens by kind, cost and the head of a tape, read line by line (each call record carries its
 * usage and cost inline; the requests are not rebuilt, which readTape would do).
 */
export function tapeFacts(
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
