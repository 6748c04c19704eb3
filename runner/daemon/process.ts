// Worker processes: each attempt runs `runner/daemon/worker.ts` (the same wiring as `scifi run`)
// in its own process group, with output to a log file, so it survives a daemon crash and can be
// found again by pid.
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { pidAlive } from "../pid-lock.ts";

export const WORKER = new URL("./worker.ts", import.meta.url).pathname;

/** True when `pid` is a live worker of this run (not a recycled pid of some other program). */
export function isWorkerOf(pid: number | undefined, runId: string): boolean {
  if (!pidAlive(pid)) return false;
  const cmdline = `/proc/${pid}/cmdline`;
  if (!existsSync(cmdline)) return true; // no procfs: trust the pid
  const args = readFileSync(cmdline, "utf8").split("\0");
  if (args.some((a) => a.endsWith("worker.ts")) && args.includes(runId)) return true;
  // A zombie has an empty cmdline; it is not running anything.
  return false;
}

export interface WorkerArgs {
  home: string;
  runId: string;
  /** Start a new run of this SAM, or resume `runId` when absent. */
  samFile?: string;
  backend?: string;
  model?: string;
  sitePolicy?: string;
}

export interface SpawnedWorker {
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnWorker(args: WorkerArgs, logFile: string): SpawnedWorker {
  mkdirSync(dirname(logFile), { recursive: true });
  const out = openSync(logFile, "a");
  const argv = [WORKER, "--home", args.home, "--run-id", args.runId];
  if (args.samFile) argv.push("--sam", args.samFile);
  if (args.backend) argv.push("--backend", args.backend);
  if (args.model) argv.push("--model", args.model);
  if (args.sitePolicy) argv.push("--site-policy", args.sitePolicy);
  const child = spawn(process.execPath, argv, {
    // Own process group: a Ctrl-C at the daemon's terminal reaches the daemon, which decides.
    detached: true,
    stdio: ["ignore", out, out],
    env: { ...process.env, SCIFI_HOME: args.home },
  });
  closeSync(out);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: 127, signal: null }));
  });
  if (child.pid === undefined) throw new Error(`cannot start the worker process (${process.execPath})`);
  return { pid: child.pid, exited };
}

/** Resolves when a process that is not our child (adopted after a restart) has exited. */
export async function waitForExit(pid: number, runId: string, pollMs = 500): Promise<void> {
  while (isWorkerOf(pid, runId)) await new Promise((r) => setTimeout(r, pollMs));
}

/** A live worker process of this run found by scanning /proc (the daemon may have died before it wrote the pid). */
export function findWorker(runId: string): number | undefined {
  if (!existsSync("/proc")) return undefined;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (args.some((a) => a.endsWith("daemon/worker.ts")) && args.includes(runId)) return pid;
    } catch {
      // the process ended while we looked
    }
  }
  return undefined;
}

/** Signals a worker's whole process group (it leads one); ignores a group that is gone. */
export function signalWorker(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
