// The scheduling decision, kept pure so it can be tested without processes: FIFO by queue time,
// with backfill (a task waiting for GPUs or budget does not hold back smaller tasks behind it).
import type { TaskRecord } from "./records.ts";

export interface Capacity {
  /** Free run slots (concurrency minus running). */
  slots: number;
  totalGpus: number;
  usedGpus: number;
  /** USD still free today, or undefined without a daily limit. */
  usdLeft?: number;
  /** The site's daily limit (a task whose budget alone exceeds it can never run). */
  usdPerDay?: number;
}

export type Decision =
  | { key: string; action: "start" }
  | { key: string; action: "wait"; for: "gpu" | "budget"; detail: string }
  | { key: string; action: "reject"; reason: string };

type Queued = Pick<TaskRecord, "key" | "gpus" | "budgetUsd" | "queuedAt">;

export function plan(queued: readonly Queued[], capacity: Capacity): Decision[] {
  const decisions: Decision[] = [];
  let { slots, usedGpus, usdLeft } = capacity;
  for (const task of [...queued].sort((a, b) => a.queuedAt.localeCompare(b.queuedAt))) {
    if (slots <= 0) break;
    if (task.gpus > capacity.totalGpus) {
      decisions.push({
        key: task.key,
        action: "reject",
        reason: `the task asks for ${task.gpus} GPU(s); this host has ${capacity.totalGpus} (site policy totalGpus, else maxGpus)`,
      });
      continue;
    }
    if (capacity.usdPerDay !== undefined && task.budgetUsd > capacity.usdPerDay) {
      decisions.push({
        key: task.key,
        action: "reject",
        reason: `the task's budget USD ${task.budgetUsd} exceeds the site's daily limit USD ${capacity.usdPerDay} (usdPerDay); lower budget_usd`,
      });
      continue;
    }
    if (usedGpus + task.gpus > capacity.totalGpus) {
      decisions.push({
        key: task.key,
        action: "wait",
        for: "gpu",
        detail: `needs ${task.gpus}, ${capacity.totalGpus - usedGpus} free`,
      });
      continue;
    }
    if (usdLeft !== undefined && task.budgetUsd > usdLeft) {
      decisions.push({
        key: task.key,
        action: "wait",
        for: "budget",
        detail: `needs USD ${task.budgetUsd}, USD ${usdLeft.toFixed(4)} left today`,
      });
      continue;
    }
    decisions.push({ key: task.key, action: "start" });
    slots--;
    usedGpus += task.gpus;
    // A started run may spend up to its budget: reserve it.
    if (usdLeft !== undefined) usdLeft -= task.budgetUsd;
  }
  return decisions;
}
