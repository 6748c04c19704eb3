// Money spent today (UTC) by every run the daemon started: the sum of `spent.usd` from each
// attempt's checkpoint (state.json, updated after every phase), attempts started today.
import { existsSync, readFileSync } from "node:fs";
import { runDir, runFiles } from "../paths.ts";
import type { TaskRecord } from "./records.ts";

export function utcDay(date: Date = new Date()): string {
  return date.toISOString().slice(0, 10);
}

export function runSpentUsd(home: string, runId: string): number {
  const file = runFiles(runDir(home, runId)).state;
  if (!existsSync(file)) return 0;
  try {
    const state = JSON.parse(readFileSync(file, "utf8")) as { spent?: { usd?: number } };
    return state.spent?.usd ?? 0;
  } catch {
    return 0;
  }
}

export function spentToday(home: string, tasks: readonly TaskRecord[], now: Date = new Date()): number {
  const day = utcDay(now);
  let usd = 0;
  for (const task of tasks)
    for (const attempt of task.attempts)
      if (attempt.startedAt.slice(0, 10) === day) usd += runSpentUsd(home, attempt.runId);
  return usd;
}
