// `scifi evolve` speed (issue 30): the statistics and proposals over 10,000 runs' records must take
// under 10 s, measured against reading the same records (state.json, history.jsonl, the audit tape
// through readTape, sam.json) in the same run. The runs are the evolve tests' synthetic corpus
// (test/evolve/corpus.ts, the shapes of real scripted runs; each role's system prompt padded to
// the size of the real work prompt): 80 runs written through AuditTape, then copied to 10,000
// folders with their state.json's run id made unique (the tapes keep the template's run id, which
// evolve does not read).
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readTape } from "../runner/audit/verify.ts";
import { evolve } from "../runner/evolve/evolve.ts";
import { readHistory } from "../runner/memory/history.ts";
import { runFiles } from "../runner/paths.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { modelRuns, type SynthRun, writeRun } from "../test/evolve/corpus.ts";
import { scaled } from "./size.ts";

const RUNS = scaled(10_000, 50);

export async function run(): Promise<BenchResult[]> {
  const home = mkdtempSync(join(tmpdir(), "scifi-evolve-bench-"));
  try {
    const runs = join(home, "runs");
    const templates = join(home, "templates");
    mkdirSync(runs, { recursive: true });
    const systemPrefix = readFileSync(new URL("../runner/agents/work.md", import.meta.url), "utf8");
    const shapes: SynthRun[] = [
      ...modelRuns(
        "scripted-weak",
        2,
        { passing: 2, late: 4, failing: 14 },
        { toolFailures: 1, allowlistRefusals: 1 },
      ),
      ...modelRuns("scripted-steady", 2, { passing: 14, late: 4, failing: 2 }),
      ...modelRuns("scripted-peer", 2, { passing: 13, late: 5, failing: 2 }, { usdPerCall: 0.01 }),
      ...modelRuns(
        "scripted-small",
        1,
        { passing: 8, late: 6, failing: 6 },
        { group: "fits", task: "gauss" },
      ),
    ];
    const dirs = shapes.map((shape) => writeRun(templates, { ...shape, systemPrefix }));
    for (let i = 0; i < RUNS; i++) {
      const from = dirs[i % dirs.length] as string;
      const runId = `bench-${String(i).padStart(5, "0")}`;
      const to = join(runs, runId);
      cpSync(from, to, { recursive: true });
      const state = JSON.parse(readFileSync(runFiles(to).state, "utf8")) as { runId: string };
      writeFileSync(runFiles(to).state, JSON.stringify({ ...state, runId }));
    }
    let bytes = 0;
    for (const name of readdirSync(join(runs, "bench-00000")))
      bytes += readFileSync(join(runs, "bench-00000", name)).length;

    // Baseline: only reading what evolve reads, parsed, nothing counted.
    const readStart = performance.now();
    let records = 0;
    for (const name of readdirSync(runs)) {
      const files = runFiles(join(runs, name));
      JSON.parse(readFileSync(files.state, "utf8"));
      JSON.parse(readFileSync(files.samJson, "utf8"));
      records += readHistory(files.history).length + readTape(files.audit, { tolerant: true }).length;
    }
    const readMs = performance.now() - readStart;

    const start = performance.now();
    const result = await evolve({ home, write: false, promptFile: join(home, "none.md") });
    const evolveMs = performance.now() - start;
    const kinds = result.proposals.map((p) => p.proposal.kind).join(", ");
    return [
      {
        name: `scifi evolve over ${result.stats.runs} runs (read, statistics, proposals)`,
        value: evolveMs,
        unit: "ms",
        baseline: readMs,
        maxValue: 10_000,
        note: `baseline = reading and parsing the same ${records} records alone (about ${Math.round(bytes / 1024)} KiB a run); ratio for information; proposals: ${kinds}`,
      },
    ];
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
