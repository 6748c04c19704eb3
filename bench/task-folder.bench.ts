// What a big task folder costs (issue 32 point 3: cost grows with what changed, not with the
// folder). Two measurements, each against its baseline in the same run:
// - a Changes snapshot of a 100,000-file folder against `find -type f | xargs stat` over the same
//   folder (the floor: one stat per file). Target: ratio <= 3.
// - a one-command run (docker, scripted model) on a task folder holding those 100,000 files against
//   the same run on a folder with only the SAM. Target: the time to `run_start` at most 5 s more.
// The whole run's time is shown too (its quota walks after each command are per-folder, not
// per-change).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { readHistory } from "../runner/memory/history.ts";
import { measureTaskFolder } from "../runner/policy/tree-walk.ts";
import { snapshotTaskFolder } from "../runner/report/changes.ts";
import { runTask } from "../runner/run/setup.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const FILES = scaled(100_000, 2_000);
const PER_FOLDER = 1_000;
const IMAGE = process.env.SCIFI_BENCH_IMAGE ?? "scifi-sci:local";

export async function run(): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), "scifi-task-folder-bench-"));
  try {
    const big = join(root, "big");
    const empty = join(root, "empty");
    mkdirSync(big);
    mkdirSync(empty);
    fill(big);

    // Best of two each, alternating: the machine's load changes from second to second.
    const floor: number[] = [];
    const snap: number[] = [];
    const measure: number[] = [];
    let listed = 0;
    for (let round = 0; round < 2; round++) {
      floor.push(timed(() => execFileSync("sh", ["-c", `find "${big}" -type f | xargs stat > /dev/null`])));
      const started = performance.now();
      const snapshot = await snapshotTaskFolder(big, "bench", { maxEntries: 2 * FILES });
      snap.push(performance.now() - started);
      listed = Object.keys(snapshot.files).length;
      if (snapshot.partial) throw new Error(`the bench snapshot is partial: ${snapshot.partial}`);
      const measureStart = performance.now();
      await measureTaskFolder(big);
      measure.push(performance.now() - measureStart);
    }
    if (listed !== FILES) throw new Error(`the snapshot listed ${listed} files, not ${FILES}`);

    writeSam(big);
    writeSam(empty);
    const script = writeScript(root);
    const emptyRun = await oneRun(root, empty, script, "empty");
    const bigRun = await oneRun(root, big, script, "big");
    const min = (xs: number[]) => Math.min(...xs);
    const load = `load average ${loadavg()[0]?.toFixed(1)}`;
    return [
      {
        name: `Changes snapshot of a ${FILES.toLocaleString("en")}-file task folder`,
        value: min(snap),
        baseline: min(floor),
        unit: "ms",
        maxRatio: 3,
        note: `baseline: find -type f | xargs stat over the same folder; the quota's walk of it took ${min(measure).toFixed(0)} ms; best of 2; ${load}`,
      },
      {
        name: `run start-up (to run_start) with ${FILES.toLocaleString("en")} files in the task folder`,
        value: bigRun.startMs,
        baseline: emptyRun.startMs,
        unit: "ms",
        maxValue: emptyRun.startMs + 5_000,
        note: `baseline: the same run on a folder with only the SAM; the whole one-command run took ${fmtS(bigRun.totalMs)} (empty folder: ${fmtS(emptyRun.totalMs)}); target: at most 5 s more than the baseline`,
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** FILES small text files, PER_FOLDER to a folder. */
function fill(dir: string): void {
  for (let d = 0; d < FILES / PER_FOLDER; d++) {
    const sub = join(dir, `d${d}`);
    mkdirSync(sub);
    for (let f = 0; f < PER_FOLDER; f++) writeFileSync(join(sub, `f${f}.txt`), `file ${d} ${f}\n`);
  }
}

function timed(fn: () => unknown): number {
  const started = performance.now();
  fn();
  return performance.now() - started;
}

function fmtS(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function writeSam(dir: string): void {
  writeFileSync(
    join(dir, "task.md"),
    `---\nname: bench-folder\nimage: ${IMAGE}\niterations: 1\n---\n# Bench\n\n## To-do\nRun one command.\n\n## Expectation\n- Done.\n`,
  );
}

function writeScript(root: string): string {
  const file = join(root, "script.yaml");
  writeFileSync(
    file,
    [
      "prescan:",
      '  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }',
      "work:",
      "  - tool_calls: [{ name: bash, input: { command: 'echo bench' } }]",
      '  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]',
      "review:",
      "  - json:",
      '      items: [{ id: root/e1, pass: true, evidence: "-" }]',
      "      findings: []",
      "      fixes: []",
      "      rank_adjustment: 0",
      "final_review:",
      "  - json: { group_suggestions: [], global_suggestions: [] }",
      "",
    ].join("\n"),
  );
  return file;
}

async function oneRun(
  root: string,
  taskDir: string,
  script: string,
  name: string,
): Promise<{ startMs: number; totalMs: number }> {
  const home = join(root, `home-${name}`);
  mkdirSync(home);
  const started = Date.now();
  const result = await runTask({
    home,
    task: join(taskDir, "task.md"),
    backend: "docker",
    model: `scripted:${script}`,
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
  });
  const totalMs = Date.now() - started;
  if (result.outcome.status !== "passed")
    throw new Error(
      `the bench run on the ${name} folder ended ${result.outcome.status}: ${result.outcome.reason}`,
    );
  const first = readHistory(join(result.dir, "history.jsonl")).find((e) => e.type === "run_start");
  if (!first) throw new Error(`the bench run on the ${name} folder has no run_start`);
  return { startMs: Date.parse(first.time) - started, totalMs };
}
