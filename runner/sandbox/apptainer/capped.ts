// One exec's apptainer process: spawned in its own process group, output capped, killed at its
// deadline (or on abort) through the caller's kill, and a last-resort watchdog on the group.
import { type ChildProcess, spawn } from "node:child_process";
import { constants as osConstants } from "node:os";
import type * as core from "../core.ts";
import * as output from "../output.ts";
import * as contract from "../types.ts";
import { apptainerEnv, BACKEND, INSTALL_FIX } from "./engine.ts";

/** After apptainer exits with its pipes still open (a background process holds them), the output
 * is complete once no data came for this long (bounded by PIPE_DRAIN_MAX_MS). */
export const PIPE_IDLE_MS = 250;

export const PIPE_DRAIN_MAX_MS = 5_000;

export interface CappedOptions {
  stdin: string | Buffer | undefined;
  maxOutputBytes: number;
  /** At this point onTimeout(pid of apptainer) kills the exec. */
  timeoutMs: number;
  onTimeout: (pid: number) => Promise<void>;
  watchdogMs: number;
  /** Aborting kills the exec like its timeout does (the quota guard). */
  signal?: AbortSignal | undefined;
}

export interface CappedResult extends core.InsideResult {
  timeoutFired: boolean;
  watchdogFired: boolean;
  durationMs: number;
}

/**
 * Spawns apptainer and collects capped output. Plain spawn rather than execa here: the exec is done
 * when apptainer exits, even if a background process in the container still holds the output pipes
 * (execa would wait for those pipes to close, possibly forever).
 */
export async function runCapped(bin: string, args: string[], options: CappedOptions): Promise<CappedResult> {
  const started = performance.now();
  const child = spawn(bin, args, {
    env: apptainerEnv(),
    detached: true, // own process group: the watchdog kills apptainer and everything it started
    stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  const out = new output.CappedBuffer(options.maxOutputBytes);
  const err = new output.CappedBuffer(options.maxOutputBytes);
  child.stdout?.on("data", (c: Buffer) => out.push(c));
  child.stderr?.on("data", (c: Buffer) => err.push(c));
  if (options.stdin !== undefined && child.stdin) {
    child.stdin.on("error", () => {}); // the command may exit without reading its input
    child.stdin.end(options.stdin);
  }
  let timeoutFired = false;
  let watchdogFired = false;
  let killing: Promise<void> = Promise.resolve();
  const timer = setTimeout(() => {
    timeoutFired = true;
    if (child.pid !== undefined) killing = options.onTimeout(child.pid).catch(() => {});
  }, options.timeoutMs);
  const abort = (): void => {
    if (child.pid !== undefined) killing = options.onTimeout(child.pid).catch(() => {});
  };
  if (options.signal?.aborted) abort();
  else options.signal?.addEventListener("abort", abort, { once: true });
  const watchdog = setTimeout(() => {
    watchdogFired = true;
    killGroup(child.pid);
  }, options.watchdogMs);
  try {
    const exitCode = await exited(child);
    await killing; // the exec's processes are gone before the result says so
    return {
      exitCode: exitCode ?? 137,
      stdout: out,
      stderr: err,
      timeoutFired,
      watchdogFired,
      durationMs: Math.round(performance.now() - started),
    };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", abort);
    clearTimeout(watchdog);
  }
}

/**
 * Exit code (signals as 128+n) once the process has exited and its output is read: at once when the
 * pipes close with it (the usual case), else (a leftover background process keeps them open) once
 * no data came for PIPE_IDLE_MS, at most PIPE_DRAIN_MAX_MS after the exit.
 */
export function exited(child: ChildProcess): Promise<number | null> {
  let lastData = performance.now();
  const touch = (): void => {
    lastData = performance.now();
  };
  child.stdout?.on("data", touch);
  child.stderr?.on("data", touch);
  const statusOf = (code: number | null, signal: NodeJS.Signals | null) =>
    code ?? (signal ? 128 + (osConstants.signals[signal] ?? 0) : null);
  return new Promise((resolve, reject) => {
    let poll: NodeJS.Timeout | undefined;
    const done = (status: number | null): void => {
      if (poll) clearInterval(poll);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve(status);
    };
    child.once("error", (e: NodeJS.ErrnoException) => {
      reject(
        e.code === "ENOENT"
          ? new contract.SandboxUnavailable(BACKEND, `'${child.spawnfile}' was not found`, INSTALL_FIX)
          : e,
      );
    });
    child.once("close", (code, signal) => done(statusOf(code, signal)));
    child.once("exit", (code, signal) => {
      const status = statusOf(code, signal);
      const exitedAt = performance.now();
      poll = setInterval(() => {
        const now = performance.now();
        const quiet = now - lastData >= PIPE_IDLE_MS && now - exitedAt >= PIPE_IDLE_MS;
        if (quiet || now - exitedAt >= PIPE_DRAIN_MAX_MS) done(status);
      }, 25);
    });
  });
}

export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}
