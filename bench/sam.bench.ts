// Parsing speed: 1,000 SAM files of ~5 KB each, parsed from disk, must take under 2 s in total.
// The raw baseline in the same run reads the same files and runs gray-matter alone (front matter
// split + its default YAML parse, no sections, no validation), reported as a ratio for information.
// The note adds the front-matter floor: the same with js-yaml's event parser as gray-matter's
// engine, as the parser reads plain front matter (runner/sam/yaml-fast.ts), and for comparison the
// `yaml` package's parseDocument, which it keeps for the rest (it alone costs ~5x the baseline).
// The value is the elapsed (wall) time, which is what "takes" means; the process CPU time is in the
// note (it is higher: V8's garbage collector and compiler work on helper threads at the same time).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import matter from "gray-matter";
import { parseEvents } from "js-yaml";
import { parseDocument } from "yaml";
import { parseSamSync } from "../runner/sam/parse.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const FILES = scaled(1000, 20);
const TARGET_BYTES = 5 * 1024;

export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), "scifi-sam-bench-"));
  try {
    const files = writeCorpus(dir);
    const bytes = files.reduce((n, f) => n + readFileSync(f).length, 0);
    parseAll(files); // warm-up: module loading and JIT are not what we measure
    baseline(files);
    eventsFloor(files);
    yamlFloor(files);
    const parse = undisturbed(files, parseAll);
    const raw = undisturbed(files, baseline);
    const floor = undisturbed(files, eventsFloor);
    const document = undisturbed(files, yamlFloor);
    return [
      {
        name: `parse ${FILES} SAM files (avg ${(bytes / FILES / 1024).toFixed(1)} KB), elapsed time`,
        value: parse.wall,
        unit: "ms",
        baseline: raw.wall,
        maxValue: 2000,
        note: `process CPU ${parse.cpu.toFixed(0)} ms; sums of per-batch best-of-${REPEATS}; baseline = read + gray-matter alone, ratio for information; read + gray-matter with js-yaml's events ${floor.wall.toFixed(1)} ms (ratio ${(floor.wall / raw.wall).toFixed(1)}), the parse is ${(parse.wall / floor.wall).toFixed(1)}x that; with yaml's parseDocument instead ${document.wall.toFixed(1)} ms (ratio ${(document.wall / raw.wall).toFixed(1)})`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function parseAll(files: string[]): void {
  for (const file of files) {
    const result = parseSamSync(file);
    if (!result.ok) throw new Error(`benchmark SAM is invalid: ${result.diagnostics[0]?.message}`);
  }
}

function baseline(files: string[]): void {
  for (const file of files) {
    const parsed = matter(readFileSync(file, "utf8"), {});
    if (parsed.content.length === 0) throw new Error("baseline lost the body");
  }
}

/** What every parse must do at least: read, split, and read the front matter's YAML events. */
function eventsFloor(files: string[]): void {
  for (const file of files) {
    const parsed = matter(readFileSync(file, "utf8"), {
      engines: { yaml: (text: string) => ({ events: parseEvents(text, {}) }) },
    });
    if (parsed.content.length === 0) throw new Error("floor lost the body");
  }
}

/** The same with a `yaml` Document of the front matter (the parser's path for what is not plain). */
function yamlFloor(files: string[]): void {
  for (const file of files) {
    const parsed = matter(readFileSync(file, "utf8"), {
      engines: { yaml: (text: string) => parseDocument(text) },
    });
    if (parsed.content.length === 0) throw new Error("floor lost the body");
  }
}

const BATCHES = scaled(10, 2);
const REPEATS = scaled(5, 1);

/**
 * Time for all files when undisturbed: the files are split into batches, each batch is run
 * REPEATS times, and the fastest run of each batch is summed. On a shared machine a neighbour's
 * burst then spoils one repeat of one batch instead of the whole measurement.
 */
function undisturbed(files: string[], work: (batch: string[]) => void): { cpu: number; wall: number } {
  const size = Math.ceil(files.length / BATCHES);
  let cpuTotal = 0;
  let wallTotal = 0;
  for (let b = 0; b < BATCHES; b++) {
    const batch = files.slice(b * size, (b + 1) * size);
    let fastest = { cpu: Number.POSITIVE_INFINITY, wall: Number.POSITIVE_INFINITY };
    for (let r = 0; r < REPEATS; r++) {
      const cpuStart = process.cpuUsage();
      const start = performance.now();
      work(batch);
      const wall = performance.now() - start;
      const used = process.cpuUsage(cpuStart);
      const cpu = (used.user + used.system) / 1000;
      if (wall < fastest.wall) fastest = { cpu, wall };
    }
    cpuTotal += fastest.cpu;
    wallTotal += fastest.wall;
  }
  return { cpu: cpuTotal, wall: wallTotal };
}

function writeCorpus(dir: string): string[] {
  const files: string[] = [];
  for (let i = 0; i < FILES; i++) {
    const file = join(dir, `sam-${String(i).padStart(4, "0")}.md`);
    writeFileSync(file, samText(i));
    files.push(file);
  }
  return files;
}

/** A realistic SAM: full front matter, a table and code, a checked Expectation, one sub-SAM. */
function samText(i: number): string {
  const head = [
    "---",
    `name: bench-${i}`,
    "group: bench",
    "walltime: 1h30m",
    "iterations: 10",
    "budget_usd: 2.50",
    "network: false",
    "gpu: 0",
    "cpus: 2",
    "memory: 4G",
    "scratch: 10G",
    "mounts:",
    "  - /data/run1:/data:ro",
    `  - {host: /data/ref${i}, container: /ref, mode: ro}`,
    "skills: [root, pandas]",
    "difficulty: medium",
    "rank: {work: 2, control: 3}",
    "---",
    `# Benchmark task ${i}: fit and summarise`,
    "",
    "## Context",
    "The detector readout writes one CSV per run. Each row is an event with a timestamp, a channel",
    "and a calibrated energy. We need a per-channel summary and a Gaussian fit of the peak.",
    "",
    "| column | unit | meaning |",
    "|--------|------|---------|",
    "| time   | ns   | event time since run start |",
    "| ch     |      | channel number 0..63 |",
    "| e      | GeV  | calibrated energy |",
    "",
    "## To-do",
    "1. Read every CSV under `/data` and concatenate them.",
    "2. Compute per-channel count, mean and standard deviation of `e`.",
    "3. Fit a Gaussian to the energy peak between 40 and 60 GeV.",
    "",
    "```python",
    "import pandas as pd",
    "df = pd.concat(pd.read_csv(p) for p in paths)",
    "```",
    "",
    "## Expectation",
  ];
  const items: string[] = [];
  for (let k = 0; k < 5; k++) {
    items.push(
      `- Item ${k}: the file \`out/result-${k}.json\` exists and has the keys \`mean\`, \`sigma\`, \`chi2\`.`,
      "  The values are within the tolerances listed in the reference file for this channel group.",
      "  ```check timeout=30s",
      `  python3 checks/compare.py out/result-${k}.json checks/reference-${k}.json --tolerance 1e-3`,
      "  ```",
    );
  }
  const sub = [
    "",
    "## Sub-SAM: calibration cross-check",
    "### To-do",
    "Recompute the calibration constants from the pedestal runs and compare them to the database.",
    "### Expectation",
    "- `out/calibration.csv` differs from the database by less than 0.5 % per channel.",
    "  ```check",
    "  python3 checks/calib.py out/calibration.csv",
    "  ```",
    "",
  ];
  let text = [...head, ...items, ...sub].join("\n");
  // Pad the Context with prose up to the target size, so every file is ~5 KB.
  const filler = "Further notes on the run conditions, trigger settings and known noisy channels. ";
  let padding = "";
  while (text.length + padding.length < TARGET_BYTES) padding += filler;
  text = text.replace("## To-do", `${padding.trim()}\n\n## To-do`);
  return text;
}
