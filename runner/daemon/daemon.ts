// The host daemon's lifecycle: it takes the locks, recovers what a dead daemon left, prunes orphan
// sandboxes, watches the inbox, looks at operator requests and the queue on a timer, and stops
// cleanly on SIGTERM. The work is done by its pieces, which share one DaemonCore (context.ts):
// intake (inbox and operator), scheduler (FIFO, concurrency, GPUs, daily USD), run approval,
// workers (local attempts: start, resume, end) and SLURM placement; recovery runs once at start.
import { existsSync, mkdirSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { homePaths, INBOX_LOCK } from "../paths.ts";
import { type DaemonPlacement, loadSitePolicy, type SitePolicy, sitePolicyPath } from "../policy/site.ts";
import type { DaemonCore, DaemonOptions, Live } from "./context.ts";
import { takeRequests } from "./control.ts";
import { type InboxWatcher, watchInbox } from "./inbox.ts";
import { Intake } from "./intake.ts";
import { acquireLock } from "./lock.ts";
import { createLogger, type Logger } from "./log.ts";
import { SlurmPlacement } from "./placement.ts";
import { signalWorker } from "./process.ts";
import { daemonPaths, type TaskRecord, writeTask } from "./records.ts";
import { pruneSandboxes, recover } from "./recovery.ts";
import { RunApproval } from "./run-approval.ts";
import { byQueueTime, Scheduler } from "./scheduler.ts";
import { Workers } from "./workers.ts";

export type { DaemonOptions } from "./context.ts";

export { INBOX_LOCK };

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
  readonly #log: Logger;
  readonly #records = new Map<string, TaskRecord>();
  readonly #live = new Map<string, Live>();
  readonly #core: DaemonCore;
  readonly #workers: Workers;
  readonly #slurm: SlurmPlacement;
  readonly #runApproval: RunApproval;
  readonly #scheduler: Scheduler;
  readonly #intake: Intake;
  #watcher: InboxWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  #release: (() => void) | undefined;
  #stopping = false;

  constructor(options: DaemonOptions) {
    this.#options = options;
    this.home = resolve(options.home);
    this.inbox = resolve(options.inbox ?? homePaths(this.home).tasks);
    const sitePath = sitePolicyPath(this.home, options.sitePolicy);
    const site = loadSitePolicy(sitePath, options.sitePolicy !== undefined).policy;
    this.concurrency = options.concurrency ?? defaultConcurrency(site);
    this.placement = options.placement ?? site.daemonPlacement ?? "local";
    this.#log = options.log ?? createLogger(options.logFormat ?? "text");
    const home = this.home;
    const daemon = this;
    this.#core = {
      home,
      options,
      site,
      log: this.#log,
      records: this.#records,
      live: this.#live,
      get stopping() {
        return daemon.#stopping;
      },
      save: (record) => writeTask(home, record),
      schedule: () => this.#scheduler.schedule(),
    };
    this.#slurm = new SlurmPlacement(this.#core);
    this.#workers = new Workers(
      this.#core,
      this.placement === "slurm" ? (record, attempt) => this.#slurm.place(record, attempt) : undefined,
    );
    this.#runApproval = new RunApproval(this.#core, this.placement);
    this.#scheduler = new Scheduler(this.#core, {
      concurrency: this.concurrency,
      placement: this.placement,
      runApproval: this.#runApproval,
      begin: (record) => this.#workers.begin(record),
    });
    this.#intake = new Intake(this.#core, (record, live) =>
      live.pid === 0 ? this.#slurm.cancel(record, live) : this.#workers.cancel(record, live),
    );
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
    recover(this.#core, this.#workers, this.#slurm);
    await pruneSandboxes(this.#core);
    this.#watcher = watchInbox(this.inbox, {
      settleMs: this.#options.settleMs ?? 1000,
      onTask: (entry) => this.#intake.onTask(entry),
      onRemoved: (entry) => this.#intake.onRemoved(entry),
      onError: (error) => this.#log("watch_error", { error: error.message }),
    });
    this.#timer = setInterval(() => this.#tick(), this.#options.pollMs ?? 500);
    this.#scheduler.schedule();
  }

  /** SIGTERM: take nothing new, let every worker checkpoint and stop its sandbox, then release the lock. */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    clearInterval(this.#timer);
    // Requests stay pending in the run folders; the next daemon takes them up again.
    this.#runApproval.stopAsking();
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
    return byQueueTime(this.#records);
  }

  #tick(): void {
    for (const request of takeRequests(this.home)) this.#intake.onRequest(request);
    this.#scheduler.schedule();
  }
}
