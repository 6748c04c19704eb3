// A run's numbers as its checkpoint (state.json, rewritten after every phase) has them, and the
// money spent today (UTC) by every run the daemon started: the sum of `spent.usd` of the attempts
// started today.
import { existsSync, readFileSync } from "node:fs";
import { runDir, runFiles } from "../paths.ts";
import type { TaskRecord } from "./records.ts";

export interface RunStateView {
  phase: string;
  iteration: number;
  outcome?: { status: "passed" | "failed" | "blocked"; reason: string };
  spent: { usd: number; tokens: number };
  /** The run's live limits (`scifi ctl` may have changed them since the task was queued). */
  limits?: { usd?: number };
  /** Set while the run is paused (scifi ctl). */
  paused?: { at: string; phase: string; reason: string };
}

export function readRunState(home: string, runId: string): RunStateView | undefined {
  const file = runFiles(runDir(home, runId)).state;
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as RunStateView;
  } catch {
    return undefined;
  }
}

export function utcDay(date: Date = new Date()): string {
  return date.toISOString().slice(0, 10);
}

export function runSpentUsd(home: string, runId: string): number {
  return readRunState(home, runId)?.spent?.usd ?? 0;
}

/**
 * The money cap a running task's run holds now: its checkpoint's limit, which an applied `scifi ctl
 * limits --budget-usd` changed, else the task record's budget (the daemon reserves what is left of it).
 */
export function runBudgetUsd(home: string, runId: string, recorded: number): number {
  const usd = readRunState(home, runId)?.limits?.usd;
  return typeof usd === "number" && Number.isFinite(usd) && usd > 0 ? usd : recorded;
}

export function spentToday(home: string, tasks: readonly TaskRecord[], now: Date = new Date()): number {
  const day = utcDay(now);
  let usd = 0;
  for (const task of tasks)
    for (const attempt of task.attempts)
      if (attempt.startedAt.slice(0, 10) === day) usd += runSpentUsd(home, attempt.runId);
  return usd;
}
