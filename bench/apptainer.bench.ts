// Apptainer exec overhead: scifi's backend vs a raw `apptainer exec instance://` in the same run,
// measured inside the non-root harness (test/sandbox/apptainer/bench-exec.ts). Target ratio <= 1.10.
import { join } from "node:path";
import { execa } from "execa";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const NAME = "apptainer exec overhead (median per exec of `true`)";

export async function run(): Promise<BenchResult[]> {
  const script = join(import.meta.dirname, "..", "scripts", "apptainer-harness.sh");
  const rounds = String(scaled(60, 3));
  const r = await execa("bash", [script, "run", "node", "test/sandbox/apptainer/bench-exec.ts", rounds], {
    reject: false,
    all: true,
  });
  const line = String(r.all)
    .split("\n")
    .find((l) => l.startsWith("SCIFI_BENCH_JSON "));
  if (r.exitCode !== 0 || !line) {
    const why = String(r.all).trim().split("\n").slice(-5).join(" / ");
    return [{ name: NAME, value: Number.NaN, unit: "ms", maxRatio: 1.1, note: `harness run failed: ${why}` }];
  }
  const m = JSON.parse(line.slice("SCIFI_BENCH_JSON ".length)) as {
    rounds: number;
    backendMs: number;
    rawMs: number;
    layers?: Record<string, number>;
  };
  return [
    {
      name: NAME,
      value: m.backendMs,
      unit: "ms",
      baseline: m.rawMs,
      maxRatio: 1.1,
      note: `${m.rounds} rotated rounds, non-root in the harness; baseline: raw apptainer exec instance://`,
    },
    // What each layer scifi adds costs (medians of the same rounds; no target, for reading).
    ...Object.entries(m.layers ?? {}).map(([layer, ms]) => ({
      name: `  of which ${layer}`,
      value: ms,
      unit: "ms",
    })),
  ];
}
