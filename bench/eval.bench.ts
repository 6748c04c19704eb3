// `scifi eval` against the same runs without it, in one run: N scripted trials (default 100, env
// SCIFI_BENCH_EVAL_TRIALS) of one small task in real Docker sandboxes at concurrency 4, against the
// same N runs as 4 parallel `scifi run` loops on fresh copies of the task. Targets: eval wall time
// at most 1.15x the loops' (the eval audits the task's checks first, from the cache: audited once
// before, as a second eval would find it); the audit from the cache at most 1 s; the eval's own
// bookkeeping per trial (fresh copy, result.json, summary recomputed and written) under 50 ms.
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { runEval } from "../runner/eval/engine.ts";
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
  const loops = await parallelRuns(root, task, trials);
  const home = join(root, "eval-home");
  mkdirSync(home);
  // The audit of the task's checks (scifi check-task), once uncached, then from its cache: the
  // timed eval below audits the task too, as every eval does, and reads the cache.
  const { auditTask } = await import("../runner/check-task/audit.ts");
  const a0 = performance.now();
  await auditTask(task, { home });
  const uncachedSec = (performance.now() - a0) / 1000;
  const a1 = performance.now();
  const cached = await auditTask(task, { home });
  const cachedSec = (performance.now() - a1) / 1000;
  if (!cached.cached)
    throw new Error("bench eval: the second audit of the same task was not read from the cache");
  const bookkeeping: number[] = [];
  const start = performance.now();
  const outcome = await runEval({
    home,
    suite: join(root, "suite"),
    models: [MODEL],
    repeats: trials,
    concurrency: CONCURRENCY,
    onBookkeeping: (_id, ms) => bookkeeping.push(ms),
  });
  const evalSec = (performance.now() - start) / 1000;
  if (outcome.summary.trials.pass !== trials)
    throw new Error(
      `bench eval: ${outcome.summary.trials.pass} of ${trials} trials passed (${outcome.evalDir})`,
    );
  const sorted = [...bookkeeping].sort((a, b) => a - b);
  const mean = bookkeeping.reduce((s, x) => s + x, 0) / Math.max(1, bookkeeping.length);
  return [
    {
      name: `eval: wall time of ${trials} scripted trials at concurrency ${CONCURRENCY} vs 4 parallel 'scifi run' loops`,
      value: evalSec,
      baseline: loops,
      unit: "s",
      maxRatio: 1.15,
    },
    {
      name: "eval: the audit of a task's checks, from the cache (a second eval of the same task)",
      value: cachedSec,
      unit: "s",
      maxValue: 1,
      note: `uncached (the first audit: 4 scripted runs): ${uncachedSec.toFixed(1)} s`,
    },
    {
      name: "eval: bookkeeping per trial (copy, result.json, summary.json and .csv)",
      value: mean,
      unit: "ms",
      maxValue: 50,
      note: `median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms`,
    },
  ];
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
