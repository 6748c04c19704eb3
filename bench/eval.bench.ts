// `scifi eval` against the same runs without it, in one run: N scripted trials (default 100, env
// SCIFI_BENCH_EVAL_TRIALS) of one small task in real Docker sandboxes at concurrency 4, against the
// same N runs as 4 parallel `scifi run` loops on fresh copies of the task. Targets: eval wall time
// at most 1.15x the loops'; the audit of the task's checks on the eval's second run (read from the
// cache the first eval of the same task wrote) at most 1 s, timed in the eval's own path; the
// eval's own bookkeeping per trial (resume check, fresh copy, result.json, summary computed and
// written) under 50 ms at the median, with its p90 and each part's wall and CPU time reported (the
// machine may be shared: the load average is given with each figure).
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { BOOKKEEPING_PARTS, type Bookkeeping, totalOf } from "../runner/eval/bookkeeping.ts";
import { runEval } from "../runner/eval/engine.ts";
import { readAudit } from "../runner/eval/flags.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const exec = promisify(execFile);
const REPO = join(import.meta.dirname, "..");
const CLI = join(REPO, "bin", "scifi.js");
const FIXTURES = join(REPO, "test", "eval", "fixtures");
const MODEL = `scripted:${join(FIXTURES, "models", "pass.yaml")}`;
const CONCURRENCY = 4;

export async function run(): Promise<BenchResult[]> {
  const trials = Number(process.env.SCIFI_BENCH_EVAL_TRIALS ?? scaled(100, 4));
  const root = mkdtempSync(join(tmpdir(), "scifi-bench-eval-"));
  const task = join(root, "suite", "echo");
  mkdirSync(task, { recursive: true });
  cpSync(join(FIXTURES, "suite", "echo", "task.nl.md"), join(task, "task.md"));
  const loadBefore = loadAverage();
  const loops = await parallelRuns(root, task, trials);
  const home = join(root, "eval-home");
  mkdirSync(home);
  // A first eval (one trial) audits the task's checks uncached, as every first eval of a task does;
  // the timed eval below is the second: its audit is read from the cache, in the eval's own path.
  let uncachedMs = Number.NaN;
  const first = await runEval({
    home,
    suite: join(root, "suite"),
    models: [MODEL],
    repeats: 1,
    concurrency: 1,
    onAudited: (ms) => {
      uncachedMs = ms;
    },
  });
  const firstAudit = readAudit(first.evalDir, "echo");
  if (!firstAudit || firstAudit.cached === true)
    throw new Error(`bench eval: the first eval's audit was not run afresh (${first.evalDir})`);
  let cachedMs = Number.NaN;
  const bookkeeping: Bookkeeping[] = [];
  const start = performance.now();
  const outcome = await runEval({
    home,
    suite: join(root, "suite"),
    models: [MODEL],
    repeats: trials,
    concurrency: CONCURRENCY,
    onAudited: (ms) => {
      cachedMs = ms;
    },
    onBookkeeping: (_id, parts) => bookkeeping.push(parts),
  });
  const evalSec = (performance.now() - start) / 1000;
  const load = `load average ${loadBefore} before, ${loadAverage()} after, ${cpus().length} CPUs`;
  if (outcome.summary.trials.pass !== trials)
    throw new Error(
      `bench eval: ${outcome.summary.trials.pass} of ${trials} trials passed (${outcome.evalDir})`,
    );
  if (readAudit(outcome.evalDir, "echo")?.cached !== true)
    throw new Error(`bench eval: the second eval's audit was not read from the cache (${outcome.evalDir})`);
  if (bookkeeping.length !== trials)
    throw new Error(`bench eval: bookkeeping timed for ${bookkeeping.length} of ${trials} trials`);
  const totals = bookkeeping.map((b) => totalOf(b).wallMs);
  const byPart = BOOKKEEPING_PARTS.map((part) => {
    const wall = bookkeeping.map((b) => b[part].wallMs);
    const cpu = bookkeeping.map((b) => b[part].cpuMs);
    return `${part} ${ms(quantile(wall, 0.5))}/${ms(quantile(wall, 0.9))} (CPU ${ms(quantile(cpu, 0.5))})`;
  });
  const cpuTotals = bookkeeping.map((b) => totalOf(b).cpuMs);
  return [
    {
      name: `eval: wall time of ${trials} scripted trials at concurrency ${CONCURRENCY} vs 4 parallel 'scifi run' loops`,
      value: evalSec,
      baseline: loops,
      unit: "s",
      maxRatio: 1.15,
      note: load,
    },
    {
      name: "eval: the audit of a task's checks on its second eval (from the cache, the eval's own path)",
      value: cachedMs / 1000,
      unit: "s",
      maxValue: 1,
      note: `the first eval's audit, uncached (4 scripted runs in sandboxes): ${(uncachedMs / 1000).toFixed(1)} s`,
    },
    {
      name: `eval: bookkeeping per trial, median of ${trials} trials (resume check, copy, result.json, summary computed and written)`,
      value: quantile(totals, 0.5),
      unit: "ms",
      maxValue: 50,
      note: `p90 ${ms(quantile(totals, 0.9))} ms, mean ${ms(mean(totals))} ms, max ${ms(Math.max(...totals))} ms; CPU median ${ms(quantile(cpuTotals, 0.5))} ms; by part, median/p90 wall ms: ${byPart.join(", ")}; ${load}`,
    },
  ];
}

/** The q-quantile of `xs` (nearest rank). */
function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

function mean(xs: readonly number[]): number {
  return xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);
}

function ms(x: number): string {
  return x.toFixed(1);
}

function loadAverage(): string {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

/** The same runs without the eval: 4 loops of `scifi run` on fresh copies of the task, `trials` in all. */
async function parallelRuns(root: string, task: string, trials: number): Promise<number> {
  const home = join(root, "runs-home");
  mkdirSync(home);
  let next = 0;
  const loop = async (): Promise<void> => {
    for (let i = next++; i < trials; i = next++) {
      const copy = join(root, "copies", String(i), "echo");
      cpSync(task, copy, { recursive: true });
      await exec(process.execPath, [CLI, "run", join(copy, "task.md"), "--model", MODEL], {
        env: { ...process.env, SCIFI_HOME: home },
        timeout: 300_000,
      });
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  return (performance.now() - start) / 1000;
}
