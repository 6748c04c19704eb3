// The daemon under load: N trivial tasks (scripted model, one tool call each; default 200, env
// SCIFI_BENCH_DAEMON_TASKS) dropped at once into the inbox of a real `scifi daemon` at concurrency 4.
// Reports tasks per minute, seconds per task against a raw baseline measured in the same run (the
// same task through 4 parallel `scifi run` processes, no daemon), the daemon's own CPU time as a
// share of wall time (target < 5 %) and its peak RSS with every task queued (target < 200 MB).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const REPO = join(import.meta.dirname, "..");
const CLI = join(REPO, "bin", "scifi.js");
const FIXTURES = join(REPO, "test", "daemon", "fixtures");
const MODEL = `scripted:${join(FIXTURES, "trivial.yaml")}`;
const CONCURRENCY = 4;
const BASELINE_TASKS = scaled(8, 4);
/** Clock ticks per second for /proc/<pid>/stat (USER_HZ; 100 on Linux). */
const TICKS = 100;

export async function run(): Promise<BenchResult[]> {
  const count = Number(process.env.SCIFI_BENCH_DAEMON_TASKS ?? scaled(200, 4));
  const sam = readFileSync(join(FIXTURES, "trivial.md"), "utf8");
  const baseline = await rawSecondsPerTask(sam);
  const daemon = await throughDaemon(sam, count);
  return [
    {
      name: `daemon: seconds per task (${count} tasks, concurrency ${CONCURRENCY}) vs 4 parallel 'scifi run'`,
      value: daemon.wallSec / count,
      unit: "s",
      baseline,
      maxRatio: 1.15,
      note: `${((count / daemon.wallSec) * 60).toFixed(1)} tasks per minute`,
    },
    {
      name: "daemon: own CPU time as a share of wall time",
      value: (daemon.cpuSec / daemon.wallSec) * 100,
      unit: "%",
      maxValue: 5,
      note: `${daemon.cpuSec.toFixed(2)} s CPU in ${daemon.wallSec.toFixed(0)} s`,
    },
    {
      name: `daemon: peak RSS with ${count} tasks queued`,
      value: daemon.peakRssMb,
      unit: "MB",
      maxValue: 200,
    },
  ];
}

function home(label: string): { home: string; inbox: string } {
  const root = mkdtempSync(join(tmpdir(), `scifi-bench-daemon-${label}-`));
  const inbox = join(root, "home", "tasks");
  mkdirSync(inbox, { recursive: true });
  return { home: join(root, "home"), inbox };
}

/** The raw path: the same trivial task through `scifi run`, CONCURRENCY processes at a time. */
async function rawSecondsPerTask(sam: string): Promise<number> {
  const h = home("raw");
  const files = Array.from({ length: BASELINE_TASKS }, (_, i) => {
    const dir = join(h.inbox, `t${i}`);
    mkdirSync(dir);
    writeFileSync(join(dir, "task.md"), sam);
    return dir;
  });
  const started = performance.now();
  // A pool of CONCURRENCY lanes, each taking the next task when its run ends (as the daemon does).
  let next = 0;
  const lane = async () => {
    for (let dir = files[next++]; dir !== undefined; dir = files[next++])
      await exited(cli(h.home, ["run", dir, "--model", MODEL]));
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  return (performance.now() - started) / 1000 / BASELINE_TASKS;
}

async function throughDaemon(
  sam: string,
  count: number,
): Promise<{ wallSec: number; cpuSec: number; peakRssMb: number }> {
  const h = home("daemon");
  const daemon = cli(h.home, [
    "daemon",
    "--model",
    MODEL,
    "--concurrency",
    String(CONCURRENCY),
    "--settle-ms",
    "300",
    "--log-format",
    "json",
  ]);
  const pid = daemon.pid as number;
  await until(() => readdirSync(join(h.home)).includes("daemon"), 30_000);
  const cpuBefore = cpuTicks(pid);
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const file = join(h.inbox, `t${String(i).padStart(4, "0")}.md`);
    writeFileSync(`${file}.tmp`, sam);
    renameSync(`${file}.tmp`, file);
  }
  const tasksDir = join(h.home, "daemon", "tasks");
  await until(() => ended(tasksDir) >= count, count * 60_000);
  const wallSec = (performance.now() - started) / 1000;
  const cpuSec = (cpuTicks(pid) - cpuBefore) / TICKS;
  const peakRssMb = peakRss(pid) / 1024;
  daemon.kill("SIGTERM");
  await exited(daemon);
  return { wallSec, cpuSec, peakRssMb };
}

function ended(tasksDir: string): number {
  let n = 0;
  for (const f of readdirSync(tasksDir)) {
    if (!f.endsWith(".json")) continue;
    try {
      const state = (JSON.parse(readFileSync(join(tasksDir, f), "utf8")) as { state: string }).state;
      if (state === "passed" || state === "failed" || state === "blocked" || state === "rejected") n++;
    } catch {
      // being replaced right now
    }
  }
  return n;
}

function cli(homeDir: string, args: string[]): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    cwd: homeDir,
    env: { ...process.env, SCIFI_HOME: homeDir },
    stdio: "ignore",
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

async function until(probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`bench: timed out after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** utime + stime of the process itself (children are separate processes, not counted). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/** VmHWM: the process's peak resident set (kB). */
function peakRss(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? 0);
}
