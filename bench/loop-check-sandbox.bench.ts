// What a fresh check sandbox per iteration costs the loop: the runner's checks of a shipped example
// (tasks/examples/gfortran-build-run, in a copy of its task folder) run in a sandbox started for them
// and stopped after, against the same checks in the already-running work sandbox, in the same run.
// The checks' own time is on both sides, so the difference is one extra sandbox's start + stop.
// Docker in this process; Apptainer inside the non-root harness (as bench/apptainer.bench.ts does).
// Also what a compare stage adds against a hidden check as it ran before stages (outputs copied out,
// the runner-built folder), paired per round.
// Targets: at most +1.0 s per iteration on Docker, +2.0 s on Apptainer (median of the paired rounds).
// SCIFI_BENCH_ROUNDS (default 10) rounds per engine, alternating which side goes first.
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { createDockerBackend } from "../runner/sandbox/docker.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { type CheckSandboxResult, measureCheckSandbox, median, quantile } from "./check-sandbox.ts";
import { scaled } from "./size.ts";

const IMAGE = process.env.SCIFI_BENCH_IMAGE ?? "scifi-sci:local";
const ROUNDS = Number(process.env.SCIFI_BENCH_ROUNDS ?? scaled(10, 1));
const repo = join(import.meta.dirname, "..");

export async function run(): Promise<BenchResult[]> {
  execFileSync("bash", [join(repo, "scripts", "build-image.sh")], { stdio: "ignore" });
  const docker = await measureCheckSandbox({
    backend: createDockerBackend(),
    image: IMAGE,
    rounds: ROUNDS,
    root: tmpdir(),
  });
  return [...report("docker", docker, 1.0, "in this process"), ...(await apptainer())];
}

/** The same measurement inside the harness (test/sandbox/apptainer/bench-check-sandbox.ts). */
async function apptainer(): Promise<BenchResult[]> {
  const script = join(repo, "scripts", "apptainer-harness.sh");
  const failed = (why: string): BenchResult[] => [
    {
      name: "apptainer: added per iteration by a fresh check sandbox (median)",
      value: Number.NaN,
      unit: "s",
      maxValue: 2.0,
      note: `harness run failed: ${why}`,
    },
  ];
  const sif = await execa("bash", [script, "sif", IMAGE], { reject: false, all: true });
  if (sif.exitCode !== 0) return failed(lastLines(String(sif.all)));
  const r = await execa(
    "bash",
    [script, "run", "node", "test/sandbox/apptainer/bench-check-sandbox.ts", IMAGE, String(ROUNDS)],
    { reject: false, all: true },
  );
  const line = String(r.all)
    .split("\n")
    .find((l) => l.startsWith("SCIFI_BENCH_JSON "));
  if (r.exitCode !== 0 || !line) return failed(lastLines(String(r.all)));
  const m = JSON.parse(line.slice("SCIFI_BENCH_JSON ".length)) as CheckSandboxResult;
  return report("apptainer", m, 2.0, "non-root in the harness");
}

function report(engine: string, m: CheckSandboxResult, target: number, where: string): BenchResult[] {
  const s = (ms: number) => ms / 1000;
  const of = `${m.rounds} rounds alternating which side goes first, ${where}; checks of ${m.example}`;
  return [
    {
      name: `${engine}: added per iteration by a fresh check sandbox (median)`,
      value: s(median(m.addedMs)),
      unit: "s",
      maxValue: target,
      note: `fresh start+checks+stop ${s(median(m.freshMs)).toFixed(2)} s vs checks in the work sandbox ${s(median(m.inWorkMs)).toFixed(2)} s (medians); ${of}`,
    },
    {
      name: `${engine}: added per iteration by a compare stage, against a hidden check as before (median)`,
      value: s(median(m.compareAddedMs)),
      unit: "s",
      maxValue: target,
      note: `compare stage (outputs copied out, runner-built folder, fresh sandbox) ${s(median(m.compareMs)).toFixed(2)} s vs hidden check on a copy of the task folder ${s(median(m.hiddenMs)).toFixed(2)} s (medians, paired per round)`,
    },
    {
      name: `${engine}: added per iteration by a fresh check sandbox (p90)`,
      value: s(quantile(m.addedMs, 0.9)),
      unit: "s",
      note: "the 90th percentile of the paired per-round differences",
    },
    {
      name: `${engine}: start of one sandbox (median / p90)`,
      value: s(median(m.startMs)),
      unit: "s",
      note: `p90 ${s(quantile(m.startMs, 0.9)).toFixed(2)} s`,
    },
    {
      name: `${engine}: stop() of one sandbox (median / p90)`,
      value: s(median(m.stopMs)),
      unit: "s",
      note: `p90 ${s(quantile(m.stopMs, 0.9)).toFixed(2)} s; the checks inside the fresh sandbox took ${s(median(m.checksMs)).toFixed(2)} s (median)`,
    },
    {
      name: `${engine}: stop() with a process that ignores TERM/HUP inside (max)`,
      value: s(Math.max(...m.stubbornStopMs)),
      unit: "s",
      // No grace period: a sandbox's processes have nothing to save, stop() kills at once.
      maxValue: target,
      note: `${m.stubbornStopMs.length} rounds; a stop that waited for a grace period would show it here`,
    },
  ];
}

function lastLines(text: string): string {
  return text.trim().split("\n").slice(-5).join(" / ");
}
