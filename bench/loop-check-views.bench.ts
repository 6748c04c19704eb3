// What checks that share nothing cost (issue 37; bench/check-views.ts measures): a three-check
// iteration with a view and a sandbox per check against all three in one sandbox on the task folder,
// paired per round, on Docker (this process) and Apptainer (non-root, inside the harness); and the
// view of a 100,000-file task folder. Targets: +1.5 s on Docker, +3 s on Apptainer per iteration
// (median); the view at most 1 s.
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { createDockerBackend } from "../runner/sandbox/docker.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { median } from "./check-sandbox.ts";
import { type CheckViewsResult, measureCheckViews } from "./check-views.ts";
import { scaled } from "./size.ts";

const IMAGE = process.env.SCIFI_BENCH_IMAGE ?? "scifi-sci:local";
const ROUNDS = Number(process.env.SCIFI_BENCH_ROUNDS ?? scaled(3, 1));
/** Files of the task folder whose view is timed (SCIFI_BENCH_VIEW_FILES, default 100,000). */
const VIEW_FILES = Number(process.env.SCIFI_BENCH_VIEW_FILES ?? scaled(100_000, 1_000));
const repo = join(import.meta.dirname, "..");

export async function run(): Promise<BenchResult[]> {
  execFileSync("bash", [join(repo, "scripts", "build-image.sh")], { stdio: "ignore" });
  const docker = await measureCheckViews({
    backend: createDockerBackend(),
    image: IMAGE,
    rounds: ROUNDS,
    root: tmpdir(),
    manyFiles: VIEW_FILES,
  });
  return [...report("docker", docker, 1.5, "in this process"), ...(await apptainer())];
}

async function apptainer(): Promise<BenchResult[]> {
  const script = join(repo, "scripts", "apptainer-harness.sh");
  const failed = (why: string): BenchResult[] => [
    {
      name: "apptainer: added per three-check iteration by a view and a sandbox per check (median)",
      value: Number.NaN,
      unit: "s",
      maxValue: 3.0,
      note: `harness run failed: ${why}`,
    },
  ];
  const sif = await execa("bash", [script, "sif", IMAGE], { reject: false, all: true });
  if (sif.exitCode !== 0) return failed(String(sif.all).split("\n").slice(-5).join(" | "));
  const r = await execa(
    "bash",
    [
      script,
      "run",
      "node",
      "test/sandbox/apptainer/bench-check-views.ts",
      IMAGE,
      String(ROUNDS),
      String(VIEW_FILES),
    ],
    { reject: false, all: true },
  );
  const line = String(r.all)
    .split("\n")
    .find((l) => l.startsWith("SCIFI_BENCH_JSON "));
  if (r.exitCode !== 0 || !line) return failed(String(r.all).split("\n").slice(-5).join(" | "));
  const m = JSON.parse(line.slice("SCIFI_BENCH_JSON ".length)) as CheckViewsResult;
  return report("apptainer", m, 3.0, "non-root in the harness");
}

function report(engine: string, m: CheckViewsResult, target: number, where: string): BenchResult[] {
  const s = (ms: number) => ms / 1000;
  return [
    {
      name: `${engine}: added per three-check iteration by a view and a sandbox per check (median)`,
      value: s(median(m.addedMs)),
      unit: "s",
      maxValue: target,
      note: `isolated ${s(median(m.isolatedMs)).toFixed(2)} s (of which the three views ${s(median(m.viewsMs)).toFixed(3)} s) vs one shared sandbox ${s(median(m.sharedMs)).toFixed(2)} s (medians of ${m.rounds} paired rounds, ${where})`,
    },
    {
      name: `${engine}: one check's view of a ${m.manyFiles.toLocaleString("en")}-file task folder (median)`,
      value: s(median(m.manyViewMs)),
      unit: "s",
      maxValue: 1.0,
      note: `view: ${m.viewKind} (check-view.ts), made and removed; ${m.manyViewMs.length} rounds, ${where}`,
    },
  ];
}
