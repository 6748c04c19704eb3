// The daemon's scheduler: asks the queue plan (runner/daemon/queue.ts) what to start, reject or keep
// waiting, against the free slots, the host's GPUs and the day's money, and starts what it may. A
// queued task that needs `run` approved waits as `awaiting approval` without a slot; a worker whose
// run waits for a person holds no slot either (it polls, no sandbox, no model call).
import { runApprovals } from "../approval/store.ts";
import type { DaemonPlacement } from "../policy/site.ts";
import type { DaemonCore, Live } from "./context.ts";
import { plan } from "./queue.ts";
import type { TaskRecord } from "./records.ts";
import type { RunApproval } from "./run-approval.ts";
import { runBudgetUsd, runSpentUsd, spentToday } from "./spend.ts";

export interface SchedulerParts {
  concurrency: number;
  placement: DaemonPlacement;
  runApproval: RunApproval;
  /** Starts (or resumes) an attempt of the task (Workers.begin). */
  begin: (record: TaskRecord) => void;
}

export class Scheduler {
  readonly #core: DaemonCore;
  readonly #parts: SchedulerParts;
  /** Tasks already logged as waiting (for GPUs or budget), so the log says it once. */
  readonly #waitLogged = new Set<string>();

  constructor(core: DaemonCore, parts: SchedulerParts) {
    this.#core = core;
    this.#parts = parts;
  }

  schedule(): void {
    const core = this.#core;
    const { concurrency, placement, runApproval } = this.#parts;
    if (core.stopping) return;
    runApproval.dropStale();
    const queued = byQueueTime(core.records).filter((t) => {
      if (t.state !== "queued") return false;
      if (t.resumeRunId !== undefined || !runApproval.requires(t) || t.runApproval?.approved) return true;
      runApproval.ask(t);
      return false;
    });
    const working = [...core.live.values()].filter((w) => !this.#awaitingPerson(w)).length;
    if (queued.length === 0 || working >= concurrency) return;
    const decisions = plan(queued, {
      slots: concurrency - working,
      // Placed tasks get their GPUs from SLURM (--gres), not from this host.
      totalGpus: placement === "slurm" ? Number.MAX_SAFE_INTEGER : (core.site.totalGpus ?? core.site.maxGpus),
      usedGpus: [...core.live.keys()].reduce((n, key) => n + (core.records.get(key)?.gpus ?? 0), 0),
      usdLeft: this.#budgetLeft(),
      usdPerDay: core.site.usdPerDay,
    });
    for (const decision of decisions) {
      const record = core.records.get(decision.key);
      if (!record) continue;
      if (decision.action === "start") this.#parts.begin(record);
      else if (decision.action === "wait") this.#waiting(record, decision.for, decision.detail);
      else {
        record.state = "rejected";
        record.reason = decision.reason;
        core.save(record);
        core.log("rejected", { task: record.key, reason: decision.reason });
      }
    }
  }

  /** A local worker whose run has a request nobody decided yet: it waits, holding no slot. */
  #awaitingPerson(live: Live): boolean {
    if (live.pid <= 0 || !live.runId) return false;
    try {
      // A request the run does not wait for (a host asked for at run time) keeps its slot.
      return runApprovals(this.#core.home, live.runId).some(
        (v) => v.state === "pending" && v.request.waits !== false,
      );
    } catch {
      return false;
    }
  }

  /** USD still free today: the daily limit minus what today's runs spent and what running ones may still spend. */
  #budgetLeft(): number | undefined {
    const core = this.#core;
    const perDay = core.site.usdPerDay;
    if (perDay === undefined) return undefined;
    const spent = spentToday(core.home, [...core.records.values()]);
    let reserved = 0;
    for (const [key, live] of core.live) {
      // The run's live cap: a budget changed with scifi ctl is reserved as it now stands (a41).
      const budget = runBudgetUsd(core.home, live.runId, core.records.get(key)?.budgetUsd ?? 0);
      reserved += Math.max(0, budget - runSpentUsd(core.home, live.runId));
    }
    return perDay - spent - reserved;
  }

  #waiting(record: TaskRecord, why: string, detail: string): void {
    const tag = `${record.key}:${why}`;
    if (this.#waitLogged.has(tag)) return;
    this.#waitLogged.add(tag);
    this.#core.log("waiting", { task: record.key, for: why, detail });
  }
}

/** The tasks in queue order (oldest queued first). */
export function byQueueTime(records: ReadonlyMap<string, TaskRecord>): TaskRecord[] {
  return [...records.values()].sort((a, b) => a.queuedAt.localeCompare(b.queuedAt));
}
