// What this process has running that must not outlive it (sandboxes of every backend, a task's SLURM
// jobs), and the one signal policy that ends them: on SIGINT/SIGTERM/SIGHUP the owner's work is
// interrupted (a run ends through its own exit: task folder restored, hidden assets back, check views
// taken down; at most FINISH_MS), everything live is stopped meanwhile, then the process exits 128+n;
// a second signal exits at once (a stuck cleanup can be forced), but the same signal again within
// REPEAT_MS is one delivery seen twice (a signal to the process group or cgroup reaches both
// bin/scifi.js's launcher, which passes it on, and the run); at process exit a synchronous best
// effort runs. A write to a closed terminal (EIO after a hangup) never ends the process here
// (std-streams.ts). The CLI, the daemon worker, the jobs code and both backends use this module alone.
// A process with its own shutdown (the daemon) says so (deferSignals): then only the live things are
// stopped here. Nothing else defers: other listeners (signal-exit in proper-lockfile and execa) never
// keep the process alive, so a signal after a run's verdict still ends it (issue 32).
import { ignoreStdStreamErrors } from "../std-streams.ts";

/** What the process needs to stop one live thing. */
export interface LiveSandbox {
  runId: string;
  stop: () => Promise<void>;
  /** Best-effort synchronous cleanup for the process 'exit' event (no async work runs there). */
  stopSync?: () => void;
}

type Announce = (signal: NodeJS.Signals) => void;

/** The command that owns the process's end on a signal. */
export interface SignalOwner {
  /** Says what happens; called once the stop has begun (a write that fails is dropped). */
  announce?: Announce;
  /**
   * Ends the owner's work through its own exit (a run: its stop aborted, its `finally` run);
   * resolves once that is done. The process exits then, or after FINISH_MS at the latest.
   */
  interrupt?: (signal: NodeJS.Signals) => Promise<unknown>;
}

const live = new Set<LiveSandbox>();
/** Set by ownSignals(): this process ends on the signal, after cleanup, and says so. */
const owners: SignalOwner[] = [];
/** Set by deferSignals(): another part of this process ends it on the signal. */
let deferrals = 0;
let installed = false;
let stopping: NodeJS.Signals | undefined;
let stoppingAt = 0;

/** The signals that end a run (a terminal's hangup as well: its sandboxes must not outlive it). */
export const ENDING_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
/** The same signal again within this many ms is the same delivery, not a second signal. */
export const REPEAT_MS = 1_000;
/** The longest the owner's own exit may take after a signal before the process exits anyway. */
export const FINISH_MS = 20_000;

/** Registers a started sandbox (or job set); call the returned function once it is stopped. */
export function trackLive(sandbox: LiveSandbox): () => void {
  live.add(sandbox);
  installHandlers();
  return () => {
    live.delete(sandbox);
  };
}

/** Run ids of what this process has running (prune never removes these). */
export function liveRunIds(): Set<string> {
  return new Set([...live].map((s) => s.runId));
}

/** Stops everything live; errors are collected, not thrown, so one failure does not leak the rest. */
export async function stopAllLive(): Promise<Error[]> {
  const results = await Promise.allSettled([...live].map((s) => s.stop()));
  return results.flatMap((r) => (r.status === "rejected" ? [toError(r.reason)] : []));
}

/**
 * The calling command owns the process's end (`scifi run`, the daemon worker): on SIGINT/SIGTERM/
 * SIGHUP its work is interrupted and everything live is stopped, it says what happens, and once
 * its work has ended (FINISH_MS at most) the process exits 128+n, even when other listeners (lock
 * cleanup) are registered. A bare function is the announcement alone. Returns the function that
 * gives it up.
 */
export function ownSignals(owner: SignalOwner | Announce = {}): () => void {
  const own = typeof owner === "function" ? { announce: owner } : owner;
  owners.push(own);
  installHandlers();
  return () => {
    const at = owners.indexOf(own);
    if (at >= 0) owners.splice(at, 1);
  };
}

/**
 * The calling command has its own shutdown on SIGINT/SIGTERM (the daemon: workers checkpoint, the
 * lock is released) and exits itself: a signal then only stops what is live here, unless a command
 * owns the signals (ownSignals). Returns the function that gives the deferral up.
 */
export function deferSignals(): () => void {
  // No handler is installed for it: a daemon with nothing live keeps Node's own signal behaviour.
  // Its shutdown logs to a terminal that may be gone (SIGHUP): that must not end it.
  ignoreStdStreamErrors();
  deferrals++;
  let given = false;
  return () => {
    if (!given) deferrals--;
    given = true;
  };
}

function installHandlers(): void {
  if (installed) return;
  installed = true;
  ignoreStdStreamErrors();
  for (const signal of ENDING_SIGNALS) process.on(signal, onSignal);
  process.once("exit", () => {
    for (const s of live) s.stopSync?.();
  });
}

function onSignal(signal: NodeJS.Signals): void {
  if (stopping) {
    if (signal === stopping && Date.now() - stoppingAt < REPEAT_MS) return; // the same delivery
    process.exit(exitCodeOf(signal)); // the second signal: no more waiting
    return;
  }
  stopping = signal;
  stoppingAt = Date.now();
  const owned = owners.length > 0;
  // Another part of the process (the daemon) said it owns this signal and decides when to exit:
  // then we only stop what is live. Otherwise the signal keeps its outcome: exit 128 + n. (Counting
  // the signal's listeners instead took signal-exit's for an owner: after a run's verdict, when the
  // run had given its signals up, SIGTERM then ended nothing.)
  const ownedElsewhere = !owned && deferrals > 0;
  // The owner's work is interrupted first, so what it has in flight sees its stop, not a sandbox
  // vanishing under it; the live things stop meanwhile (a stop is idempotent: the run's own exit
  // awaits the same one). The announcement comes after both began: on a closed terminal it fails.
  const finished = owners.map((o) => settle(() => o.interrupt?.(signal)));
  const stopped = stopAllLive();
  for (const o of owners) settle(() => o.announce?.(signal));
  void Promise.all([stopped, within(Promise.all(finished), FINISH_MS)]).finally(() => {
    if (!ownedElsewhere) process.exit(exitCodeOf(signal));
    stopping = undefined;
  });
}

/** What `run` returns, as a promise that never rejects; a throw is swallowed (the process is ending). */
function settle(run: () => unknown): Promise<unknown> {
  try {
    return Promise.resolve(run()).catch(() => undefined);
  } catch {
    return Promise.resolve(undefined);
  }
}

/** `promise`, or undefined after `ms` (the timer holds the process until the exit it leads to). */
function within(promise: Promise<unknown>, ms: number): Promise<unknown> {
  return new Promise((done) => {
    const timer = setTimeout(done, ms);
    void promise.finally(() => {
      clearTimeout(timer);
      done(undefined);
    });
  });
}

/** 128 + the signal's number: 129 SIGHUP, 130 SIGINT, 143 SIGTERM. */
export function exitCodeOf(signal: NodeJS.Signals): number {
  return signal === "SIGINT" ? 130 : signal === "SIGHUP" ? 129 : 143;
}

function toError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}
