// The host daemon: watches the inbox, keeps one status file per task, runs queued tasks as worker
// processes (FIFO, concurrency N, GPUs and a daily USD limit respected), survives its own crash
// (adopts live workers, resumes dead ones from their checkpoint), and stops cleanly on SIGTERM.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { ApprovalGate, ApprovalTimedOut } from "../approval/gate.ts";
import { runApprovals } from "../approval/store.ts";
import type { SlurmClient } from "../jobs/slurm.ts";
import { homePaths, runDir, runFiles } from "../paths.ts";
import { type DaemonPlacement, loadSitePolicy, type SitePolicy, sitePolicyPath } from "../policy/site.ts";
import { newRunId } from "../run-id.ts";
import { requiredActions } from "../sam/approval-actions.ts";
import { type ControlRequest, newRecord, refusal, requeue, takeRequests } from "./control.ts";
import { runHook } from "./hook.ts";
import { type InboxEntry, type InboxWatcher, sha256File, watchInbox } from "./inbox.ts";
import { acquireLock } from "./lock.ts";
import { createLogger, type LogFormat, type Logger } from "./log.ts";
import { jobLogTail, type PlacedJob, submitPlaced, watchPlaced } from "./placed.ts";
import { findWorker, isWorkerOf, signalWorker, spawnWorker, waitForExit } from "./process.ts";
import { plan } from "./queue.ts";
import {
  type Attempt,
  daemonPaths,
  FINAL_STATES,
  lastAttempt,
  listTasks,
  type TaskRecord,
  writeTask,
} from "./records.ts";
import { readRunState, runSpentUsd, spentToday } from "./spend.ts";

export interface DaemonOptions {
  home: string;
  /** The inbox (default `<home>/tasks`). */
  inbox?: string;
  concurrency?: number;
  backend?: string;
  /** Model spec for every run (`scripted:FILE`, a models config path). Default: `<home>/models.yaml`. */
  model?: string;
  sitePolicy?: string;
  logFormat?: LogFormat;
  log?: Logger;
  /** How long a SAM must stay unchanged before it is taken (ms, default 1000). */
  settleMs?: number;
  /** How often operator requests and the schedule are looked at (ms, default 500). */
  pollMs?: number;
  /** SIGTERM grace for workers to checkpoint and stop their sandbox before SIGKILL (ms). */
  stopTimeoutMs?: number;
  /** Where tasks run: here in worker processes, or as SLURM jobs. Default: the site policy's `daemon.placement`, else local. */
  placement?: DaemonPlacement;
  /** How often a placed task's SLURM job is looked up (ms, default 2000). */
  slurmPollMs?: number;
}

/** The inbox's own lock (a dotfile, so never taken as a task). */
export const INBOX_LOCK = ".scifi-daemon.lock";

/** A worker that died this many times without ending its run makes the task fail. */
const MAX_RESUMES = 3;

interface Live {
  /** The local worker's pid; 0 for a task placed on SLURM (it has a job instead). */
  pid: number;
  /** The SLURM job of a placed task, once sbatch answered. */
  jobId?: string;
  runId: string;
  adopted: boolean;
  cancelling?: boolean;
  /** Settles once the attempt's end has been recorded. */
  done: Promise<void>;
}

/** Default concurrency: one run per core, at most as many as the default run memory fits. */
export function defaultConcurrency(site: Pick<SitePolicy, "defaultMemoryBytes">): number {
  const byMemory = Math.floor(totalmem() / site.defaultMemoryBytes);
  return Math.max(1, Math.min(availableParallelism(), byMemory));
}

export class Daemon {
  readonly home: string;
  readonly inbox: string;
  readonly concurrency: number;
  readonly placement: DaemonPlacement;
  readonly #options: DaemonOptions;
  readonly #site: SitePolicy;
  readonly #log: Logger;
  readonly #records = new Map<string, TaskRecord>();
  readonly #live = new Map<string, Live>();
  /** Tasks already logged as waiting (for GPUs or budget), so the log says it once. */
  readonly #waitLogged = new Set<string>();
  /** Queued tasks whose `run` approval the daemon is asking now (key -> its abort). */
  readonly #asking = new Map<string, { runId: string; abort: AbortController; gate: ApprovalGate }>();
  #watcher: InboxWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  #release: (() => void) | undefined;
  #stopping = false;

  constructor(options: DaemonOptions) {
    this.#options = options;
    this.home = resolve(options.home);
    this.inbox = resolve(options.inbox ?? homePaths(this.home).tasks);
    const sitePath = sitePolicyPath(this.home, options.sitePolicy);
    this.#site = loadSitePolicy(sitePath, options.sitePolicy !== undefined).policy;
    this.concurrency = options.concurrency ?? defaultConcurrency(this.#site);
    this.placement = options.placement ?? this.#site.daemonPlacement ?? "local";
    this.#log = options.log ?? createLogger(options.logFormat ?? "text");
  }

  /** Takes the lock, recovers what a dead daemon left, prunes orphan sandboxes, starts watching. */
  async start(): Promise<void> {
    if (!existsSync(this.inbox))
      throw new Error(`the inbox ${this.inbox} does not exist; create it (mkdir -p) or pass --tasks DIR`);
    if (!this.#options.model && !existsSync(homePaths(this.home).modelsConfig))
      throw new Error(
        `no model: pass --model SPEC or --models-config FILE, or create ${homePaths(this.home).modelsConfig} (docs/models.md)`,
      );
    mkdirSync(daemonPaths(this.home).tasks, { recursive: true });
    const lock = acquireLock(daemonPaths(this.home).lock, this.inbox);
    // A second lock in the inbox itself: two homes pointed at one inbox must not both run it.
    let inboxLock: ReturnType<typeof acquireLock>;
    try {
      inboxLock = acquireLock(join(this.inbox, INBOX_LOCK), this.inbox);
    } catch (error) {
      lock.release();
      throw error;
    }
    this.#release = () => {
      inboxLock.release();
      lock.release();
    };
    this.#log("daemon_start", {
      pid: process.pid,
      inbox: this.inbox,
      home: this.home,
      concurrency: this.concurrency,
      placement: this.placement,
      ...(lock.stale ? { staleLockPid: lock.stale.pid } : {}),
    });
    this.#recover();
    await this.#prune();
    this.#watcher = watchInbox(this.inbox, {
      settleMs: this.#options.settleMs ?? 1000,
      onTask: (entry) => this.#onTask(entry),
      onRemoved: (entry) => this.#onRemoved(entry),
      onError: (error) => this.#log("watch_error", { error: error.message }),
    });
    this.#timer = setInterval(() => this.#tick(), this.#options.pollMs ?? 500);
    this.#schedule();
  }

  /** SIGTERM: take nothing new, let every worker checkpoint and stop its sandbox, then release the lock. */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    clearInterval(this.#timer);
    // Requests stay pending in the run folders; the next daemon takes them up again.
    for (const asking of this.#asking.values()) asking.abort.abort();
    await this.#watcher?.close();
    this.#log("daemon_stopping", { running: this.#live.size });
    // Placed tasks' jobs keep running on the cluster; their watch ends and a restart adopts them.
    const live = [...this.#live.values()];
    const workers = live.filter((w) => w.pid > 0);
    for (const w of workers) signalWorker(w.pid, "SIGTERM");
    const grace = setTimeout(() => {
      for (const w of workers) signalWorker(w.pid, "SIGKILL");
    }, this.#options.stopTimeoutMs ?? 60_000);
    await Promise.all(live.map((w) => w.done));
    clearTimeout(grace);
    this.#release?.();
    this.#log("daemon_stopped", {});
  }

  /** Tasks as the daemon sees them now. */
  tasks(): TaskRecord[] {
    return [...this.#records.values()].sort((a, b) => a.queuedAt.localeCompare(b.queuedAt));
  }

  #tick(): void {
    for (const request of takeRequests(this.home)) this.#onRequest(request);
    this.#schedule();
  }

  /** Records from disk; a `running` task whose worker lives is adopted, else it waits to resume. */
  #recover(): void {
    for (const record of listTasks(this.home)) {
      this.#records.set(record.key, record);
      if (record.state !== "running") continue;
      const attempt = lastAttempt(record);
      if (!attempt) {
        record.state = "queued";
        writeTask(this.home, record);
        continue;
      }
      if (attempt.slurm) {
        this.#log("adopt", { task: record.key, job: attempt.slurm.jobId });
        this.#place(record, attempt);
        continue;
      }
      const pid = isWorkerOf(attempt.pid, attempt.runId) ? attempt.pid : findWorker(attempt.runId);
      if (pid) {
        attempt.pid = pid;
        writeTask(this.home, record);
        this.#log("adopt", { task: record.key, run: attempt.runId, pid });
        this.#track(
          record,
          attempt,
          pid,
          true,
          waitForExit(pid, attempt.runId).then(() => undefined),
        );
      } else if (readRunState(this.home, attempt.runId)?.phase === "ended") {
        // The worker finished while no daemon watched: record its outcome, nothing to resume.
        void this.#end(
          record,
          attempt,
          { pid: 0, runId: attempt.runId, adopted: true, done: Promise.resolve() },
          null,
        );
      } else {
        this.#toResume(record, attempt, "its worker died with the previous daemon");
      }
    }
  }

  async #prune(): Promise<void> {
    try {
      const { getBackend } = await import("../sandbox/registry.ts");
      const backend = await getBackend(this.#options.backend ?? "docker");
      const live = new Set([...this.#live.values()].map((w) => w.runId));
      const removed = await backend.prune({ home: this.home, liveRunIds: live });
      if (removed.length) this.#log("pruned", { sandboxes: removed });
    } catch (error) {
      this.#log("prune_failed", { error: error instanceof Error ? error.message : String(error) });
    }
  }

  #onTask(entry: InboxEntry): void {
    if (this.#stopping) return;
    const record = this.#records.get(entry.key);
    if (!record) {
      const created = newRecord(this.home, entry);
      this.#records.set(created.key, created);
      this.#save(created);
      this.#log(created.state, { task: created.key, ...(created.reason ? { reason: created.reason } : {}) });
      this.#schedule();
      return;
    }
    let hash: string;
    try {
      hash = sha256File(entry.source);
    } catch {
      return; // removed again meanwhile
    }
    if (hash === record.sha256) return;
    if (record.state === "queued" || record.state === "rejected") {
      requeue(record);
      this.#save(record);
      this.#log(record.state === "queued" ? "requeued_after_edit" : "rejected", {
        task: record.key,
        ...(record.reason ? { reason: record.reason } : {}),
      });
      this.#schedule();
    } else if (record.state === "running") {
      // The loop's tamper check sees the change (a single-file task's run reads the copy, so the
      // edit is carried over to it) and fails the run as tampering.
      if (record.kind === "file") copyFileSync(record.source, record.samFile);
      this.#log("edited_while_running", { task: record.key });
    } else {
      this.#log("edited_after_end", {
        task: record.key,
        state: record.state,
        hint: `scifi retry ${record.key}`,
      });
    }
  }

  #onRemoved(entry: InboxEntry): void {
    const record = this.#records.get(entry.key);
    if (record?.state !== "queued") return;
    record.state = "cancelled";
    record.reason = "the SAM was removed from the inbox before it ran";
    this.#save(record);
    this.#log("cancelled", { task: record.key, reason: record.reason });
  }

  #onRequest(request: ControlRequest): void {
    const record = this.#records.get(request.key);
    if (!record) {
      this.#log("request_unknown_task", { task: request.key, action: request.action });
      return;
    }
    const refused = refusal(record, request.action);
    if (refused) {
      this.#log("request_refused", { task: record.key, action: request.action, reason: refused });
      return;
    }
    if (request.action === "retry") {
      requeue(record);
      this.#save(record);
      this.#log("retry", { task: record.key, state: record.state });
      return;
    }
    const live = this.#live.get(record.key);
    if (live?.pid === 0) {
      live.cancelling = true;
      if (live.jobId) void this.#scancel(live.jobId);
      this.#log("cancelling", { task: record.key, job: live.jobId ?? "not submitted yet" });
      return;
    }
    if (live) {
      live.cancelling = true;
      signalWorker(live.pid, "SIGTERM");
      this.#log("cancelling", { task: record.key, run: live.runId, pid: live.pid });
      return;
    }
    record.state = "cancelled";
    record.reason = "cancelled by the operator before it ran";
    delete record.resumeRunId;
    this.#save(record);
    this.#log("cancelled", { task: record.key });
  }

  /**
   * Asks the queue plan what to start, reject or keep waiting; starts what it may. A queued task that
   * needs `run` approved waits as `awaiting approval` without a slot; a worker whose run waits for a
   * person holds no slot either (it polls, no sandbox, no model call).
   */
  #schedule(): void {
    if (this.#stopping) return;
    this.#dropStaleAsks();
    const queued = this.tasks().filter((t) => {
      if (t.state !== "queued") return false;
      if (t.resumeRunId !== undefined || !this.#requires(t, "run") || t.runApproval?.approved) return true;
      this.#askRun(t);
      return false;
    });
    const working = [...this.#live.values()].filter((w) => !this.#awaitingPerson(w)).length;
    if (queued.length === 0 || working >= this.concurrency) return;
    const decisions = plan(queued, {
      slots: this.concurrency - working,
      // Placed tasks get their GPUs from SLURM (--gres), not from this host.
      totalGpus:
        this.placement === "slurm" ? Number.MAX_SAFE_INTEGER : (this.#site.totalGpus ?? this.#site.maxGpus),
      usedGpus: [...this.#live.keys()].reduce((n, key) => n + (this.#records.get(key)?.gpus ?? 0), 0),
      usdLeft: this.#budgetLeft(),
      usdPerDay: this.#site.usdPerDay,
    });
    for (const decision of decisions) {
      const record = this.#records.get(decision.key);
      if (!record) continue;
      if (decision.action === "start") this.#begin(record);
      else if (decision.action === "wait") this.#waiting(record, decision.for, decision.detail);
      else {
        record.state = "rejected";
        record.reason = decision.reason;
        this.#save(record);
        this.#log("rejected", { task: record.key, reason: decision.reason });
      }
    }
  }

  #requires(record: TaskRecord, action: "run"): boolean {
    // A task placed on SLURM gets its run id on the node: its run asks there, in its job.
    if (this.placement === "slurm") return false;
    return requiredActions(record.approval, this.#site.approvalRequired).includes(action);
  }

  /** A local worker whose run has a request nobody decided yet: it waits, holding no slot. */
  #awaitingPerson(live: Live): boolean {
    if (live.pid <= 0 || !live.runId) return false;
    try {
      // A request the run does not wait for (a host asked for at run time) keeps its slot.
      return runApprovals(this.home, live.runId).some(
        (v) => v.state === "pending" && v.request.waits !== false,
      );
    } catch {
      return false;
    }
  }

  /**
   * `approval: [run]`: the daemon asks before it starts a worker. The request goes into the folder of
   * the run id reserved for the task (the run starts under it, and its own `run` question finds the
   * decision); a denial or a timeout ends the task blocked, with no run.
   */
  #askRun(record: TaskRecord): void {
    if (this.#asking.has(record.key)) return;
    if (!record.runApproval) {
      record.runApproval = { runId: newRunId(record.name ?? record.key) };
      this.#save(record);
    }
    const runId = record.runApproval.runId;
    mkdirSync(runDir(this.home, runId), { recursive: true, mode: 0o700 });
    const abort = new AbortController();
    const poll = Number(process.env.SCIFI_APPROVAL_POLL_MS);
    const gate = new ApprovalGate({
      home: this.home,
      runId,
      required: ["run"],
      siteRequired: this.#site.approvalRequired ?? [],
      timeoutSec: record.approvalTimeoutSec ?? this.#site.approvalTimeoutSec,
      ...(this.#site.onApproval ? { onApproval: this.#site.onApproval } : {}),
      pollMs: poll > 0 ? poll : 500,
      signal: abort.signal,
    });
    this.#asking.set(record.key, { runId, abort, gate });
    this.#log("awaiting_approval", { task: record.key, run: runId, action: "run" });
    const current = () => record.state === "queued" && record.runApproval?.runId === runId;
    gate
      // The same words as the run's own question (runner/loop/run.ts beginIteration), so the worker
      // finds this decision instead of asking again.
      .ask(
        { action: "run", summary: `start task ${record.name}`, detail: `SAM ${record.samFile}` },
        { once: true },
      )
      .then(
        (answer) => {
          if (!current() || !record.runApproval) return;
          if (answer.approved) {
            record.runApproval.approved = true;
            this.#save(record);
            this.#log("approved", { task: record.key, run: runId, who: answer.decision.who });
            this.#schedule();
            return;
          }
          const d = answer.decision;
          this.#finish(
            record,
            "blocked",
            `a person (${d.who}) did not let the task start: ${d.note ?? "no reason given"}`,
          );
        },
        (error: unknown) => {
          if (abort.signal.aborted || !current()) return;
          if (error instanceof ApprovalTimedOut) this.#finish(record, "blocked", error.message);
          else
            this.#log("approval_error", {
              task: record.key,
              error: error instanceof Error ? error.message : String(error),
            });
        },
      )
      .finally(() => {
        if (this.#asking.get(record.key)?.runId === runId) this.#asking.delete(record.key);
      });
  }

  /** A task that left the queue (cancelled, removed, edited) while its `run` request waited: withdrawn. */
  #dropStaleAsks(): void {
    for (const [key, asking] of this.#asking) {
      const record = this.#records.get(key);
      if (record?.state === "queued" && record.runApproval?.runId === asking.runId) continue;
      asking.abort.abort();
      this.#asking.delete(key);
      asking.gate.withdrawPending("the task left the queue before it started");
    }
  }

  /** USD still free today: the daily limit minus what today's runs spent and what running ones may still spend. */
  #budgetLeft(): number | undefined {
    const perDay = this.#site.usdPerDay;
    if (perDay === undefined) return undefined;
    const spent = spentToday(this.home, [...this.#records.values()]);
    let reserved = 0;
    for (const [key, live] of this.#live) {
      const budget = this.#records.get(key)?.budgetUsd ?? 0;
      reserved += Math.max(0, budget - runSpentUsd(this.home, live.runId));
    }
    return perDay - spent - reserved;
  }

  #waiting(record: TaskRecord, why: string, detail: string): void {
    const tag = `${record.key}:${why}`;
    if (this.#waitLogged.has(tag)) return;
    this.#waitLogged.add(tag);
    this.#log("waiting", { task: record.key, for: why, detail });
  }

  /** Starts (or resumes) an attempt; false when the SAM changed since it was queued. */
  #begin(record: TaskRecord): boolean {
    const resumeId = record.resumeRunId;
    const resumable = resumeId !== undefined && existsSync(runFiles(runDir(this.home, resumeId)).state);
    let attempt = lastAttempt(record);
    if (resumable && attempt?.runId === resumeId) {
      attempt.resumes++;
    } else {
      if (!this.#freshSam(record)) return false;
      attempt = {
        n: record.attempts.length + 1,
        // Approved to start: the run takes the id its request was made under.
        runId:
          record.runApproval?.approved && !record.attempts.some((a) => a.runId === record.runApproval?.runId)
            ? record.runApproval.runId
            : newRunId(record.name ?? record.key),
        startedAt: now(),
        resumes: 0,
      };
      record.attempts.push(attempt);
    }
    delete record.resumeRunId;
    delete record.reason;
    record.state = "running";
    delete attempt.pid;
    if (this.placement === "slurm" && !resumable) {
      // The run id is chosen by `scifi run` on the node; it is recorded once its state file appears.
      attempt.runId = "";
      attempt.slurm = { jobId: "", submitDir: "" };
      this.#save(record);
      this.#place(record, attempt);
      return true;
    }
    // Recorded before the spawn: a crash in between leaves a run id that recovery looks for in /proc.
    this.#save(record);
    const worker = spawnWorker(
      {
        home: this.home,
        runId: attempt.runId,
        ...(resumable ? {} : { samFile: record.samFile }),
        backend: this.#options.backend,
        model: this.#options.model,
        sitePolicy: this.#options.sitePolicy,
      },
      daemonPaths(this.home).log(record.key, attempt.n),
    );
    attempt.pid = worker.pid;
    this.#save(record);
    this.#log(resumable ? "resume" : "start", {
      task: record.key,
      run: attempt.runId,
      attempt: attempt.n,
      pid: worker.pid,
    });
    this.#track(
      record,
      attempt,
      worker.pid,
      false,
      worker.exited.then((e) => e.code),
    );
    return true;
  }

  /** Tracks a task placed on SLURM: submits it (unless adopted with its job), watches the job, records the end. */
  #place(record: TaskRecord, attempt: Attempt): void {
    const live: Live = { pid: 0, runId: attempt.runId, adopted: false, done: Promise.resolve() };
    this.#live.set(record.key, live);
    live.done = this.#runPlaced(record, attempt, live).catch((error: unknown) => {
      this.#live.delete(record.key);
      this.#finish(
        record,
        "failed",
        `SLURM placement failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
  }

  async #runPlaced(record: TaskRecord, attempt: Attempt, live: Live): Promise<void> {
    const { SlurmClient } = await import("../jobs/slurm.ts");
    const slurm = new SlurmClient({ timeoutMs: 30_000 });
    let job: PlacedJob | undefined = attempt.slurm?.jobId ? attempt.slurm : undefined;
    if (!job) {
      job = await submitPlaced({
        home: this.home,
        samFile: record.samFile,
        backend: this.#options.backend,
        model: this.#options.model,
      });
      attempt.slurm = { ...job };
      this.#save(record);
      this.#log("submitted", { task: record.key, attempt: attempt.n, job: job.jobId });
    }
    live.jobId = job.jobId;
    // A cancel that came while sbatch ran.
    if (live.cancelling) await this.#scancel(job.jobId);
    const status = await watchPlaced(this.home, job, slurm, {
      pollMs: this.#options.slurmPollMs ?? 2000,
      stopped: () => this.#stopping,
      onStatus: (s) => this.#slurmSeen(record, attempt, live, s.slurm?.state, s.run?.runId),
    });
    this.#live.delete(record.key);
    if (!status) return; // the daemon stopped: the job runs on, the next start adopts it
    attempt.endedAt = now();
    const outcome = status.run?.outcome;
    if (outcome) this.#finish(record, outcome.status as TaskRecord["state"], outcome.reason);
    else if (live.cancelling)
      this.#finish(record, "cancelled", `cancelled by the operator (scancel ${job.jobId})`);
    else
      this.#finish(
        record,
        "failed",
        `SLURM job ${job.jobId} ended ${status.slurm?.state ?? "(forgotten by SLURM)"} without a run outcome: ${jobLogTail(job)}`,
      );
  }

  /** Records the job's SLURM state and the node's run id as they change (the status file shows them). */
  #slurmSeen(record: TaskRecord, attempt: Attempt, live: Live, state?: string, runId?: string): void {
    if (!attempt.slurm) return;
    const changed =
      (state !== undefined && state !== attempt.slurm.state) || (runId && runId !== attempt.runId);
    if (!changed) return;
    if (state) attempt.slurm.state = state;
    if (runId) {
      attempt.runId = runId;
      live.runId = runId;
    }
    this.#save(record);
    this.#log("slurm_state", {
      task: record.key,
      job: attempt.slurm.jobId,
      state: attempt.slurm.state,
      run: runId,
    });
  }

  async #scancel(jobId: string): Promise<void> {
    const { SlurmClient } = await import("../jobs/slurm.ts");
    const slurm: SlurmClient = new SlurmClient({ timeoutMs: 30_000 });
    await slurm.scancel([jobId]).catch((error: unknown) => {
      this.#log("scancel_failed", {
        job: jobId,
        error: error instanceof Error ? error.message : String(error),
      });
    });
  }

  /** A placed task's end: its state, the log line, the on_finish hook, and the next tasks. */
  #finish(record: TaskRecord, state: TaskRecord["state"], reason: string): void {
    const attempt = lastAttempt(record);
    if (attempt && !attempt.endedAt) attempt.endedAt = now();
    record.state = state;
    record.reason = reason;
    this.#save(record);
    const run = attempt?.runId ? readRunState(this.home, attempt.runId) : undefined;
    this.#log("end", {
      task: record.key,
      run: attempt?.runId,
      job: attempt?.slurm?.jobId,
      state,
      reason,
      usd: run?.spent.usd,
      iterations: run?.iteration,
    });
    const hook = this.#site.onFinish;
    if (hook && FINAL_STATES.has(state))
      void runHook(this.home, hook, record).then((exit) =>
        this.#log("on_finish", { task: record.key, exit }),
      );
    this.#schedule();
  }

  /** The SAM the run will read is still the one validated at queue time (a single-file task gets its copy now). */
  #freshSam(record: TaskRecord): boolean {
    const ok = existsSync(record.source) && sha256File(record.source) === record.sha256;
    if (ok && record.kind === "file") {
      mkdirSync(dirname(record.samFile), { recursive: true });
      copyFileSync(record.source, record.samFile);
      if (sha256File(record.samFile) === record.sha256) return true;
    } else if (ok) {
      return true;
    }
    requeue(record);
    this.#save(record);
    this.#log(record.state === "queued" ? "requeued_after_edit" : "rejected", { task: record.key });
    return false;
  }

  #track(
    record: TaskRecord,
    attempt: Attempt,
    pid: number,
    adopted: boolean,
    exited: Promise<number | null | undefined>,
  ): void {
    const live: Live = { pid, runId: attempt.runId, adopted, done: Promise.resolve() };
    live.done = exited.then((code) => this.#end(record, attempt, live, code ?? null));
    this.#live.set(record.key, live);
  }

  /** The worker is gone: the run's own checkpoint says how it ended; without an outcome it resumes. */
  async #end(record: TaskRecord, attempt: Attempt, live: Live, code: number | null): Promise<void> {
    this.#live.delete(record.key);
    attempt.endedAt = now();
    attempt.exitCode = code;
    delete attempt.pid;
    const state = readRunState(this.home, attempt.runId);
    if (state?.phase === "ended" && state.outcome) {
      record.state = state.outcome.status;
      record.reason = state.outcome.reason;
    } else if (live.cancelling) {
      record.state = "cancelled";
      record.reason = "cancelled by the operator while it ran (checkpoint kept)";
    } else if (this.#stopping) {
      this.#toResume(record, attempt, "the daemon stopped; it resumes from its checkpoint on the next start");
      return;
    } else if (code === 2 || !state) {
      record.state = "failed";
      record.reason = `the run could not start: ${logTail(daemonPaths(this.home).log(record.key, attempt.n))}`;
    } else if (code !== null && code < 128) {
      // The worker exited by itself without an outcome: an error in the run, which a resume would repeat.
      record.state = "failed";
      record.reason = `the run stopped with an error (exit ${code}): ${logTail(daemonPaths(this.home).log(record.key, attempt.n))}`;
    } else if (attempt.resumes < MAX_RESUMES) {
      this.#toResume(record, attempt, `the worker died (exit ${code ?? "?"}) before the run ended`);
      this.#schedule();
      return;
    } else {
      record.state = "failed";
      record.reason = `the worker died ${attempt.resumes + 1} times before the run ended; see ${daemonPaths(this.home).log(record.key, attempt.n)}`;
    }
    this.#save(record);
    this.#log("end", {
      task: record.key,
      run: attempt.runId,
      state: record.state,
      reason: record.reason,
      usd: state?.spent.usd,
      iterations: state?.iteration,
    });
    if (this.#site.onFinish && FINAL_STATES.has(record.state)) {
      const exit = await runHook(this.home, this.#site.onFinish, record);
      this.#log("on_finish", { task: record.key, exit });
    }
    this.#schedule();
  }

  #toResume(record: TaskRecord, attempt: Attempt, why: string): void {
    record.state = "queued";
    record.resumeRunId = attempt.runId;
    record.reason = why;
    delete attempt.pid;
    this.#save(record);
    this.#log("resume_pending", { task: record.key, run: attempt.runId, reason: why });
  }

  #save(record: TaskRecord): void {
    writeTask(this.home, record);
  }
}

function logTail(file: string): string {
  if (!existsSync(file)) return "no worker log";
  const lines = readFileSync(file, "utf8").trim().split("\n");
  return lines.slice(-3).join(" | ") || "empty worker log";
}

function now(): string {
  return new Date().toISOString();
}
