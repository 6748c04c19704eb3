// `npm run bench`: runs every bench/*.bench.ts (or the ones named on the command line) and prints
// each measurement as a ratio against the raw baseline measured in the same run.
// `npm run bench -- --smoke [names]`: every bench at a small size (bench/size.ts); fails only when a
// bench cannot complete (throws, or measures nothing or NaN), never on timing targets. CI runs it.
import { readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";

export interface BenchResult {
  name: string;
  /** Measured value of scifi's path. */
  value: number;
  unit: string;
  /** The raw baseline measured in the same run, when the target is a ratio. */
  baseline?: number;
  /** Target: ratio value/baseline must be <= maxRatio, or value <= maxValue / >= minValue. */
  maxRatio?: number;
  maxValue?: number;
  minValue?: number;
  note?: string;
}

const dir = join(import.meta.dirname, "..", "bench");
const args = process.argv.slice(2);
const smoke = args.includes("--smoke");
// Before any bench is imported: bench/size.ts reads it at load.
if (smoke) process.env.SCIFI_BENCH_SMOKE = "1";
const only = args.filter((a) => a !== "--smoke");
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

if (only.length > 0 && files.length === 0) {
  console.error(`bench: no bench matches ${only.join(", ")}; the benches are in ${dir}`);
  process.exit(2);
}

let failed = 0;
for (const file of files) {
  console.log(`\n## ${basename(file, ".bench.ts")}${smoke ? " (smoke)" : ""}`);
  let results: BenchResult[];
  const started = performance.now();
  try {
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { run: () => Promise<BenchResult[]> };
    results = await mod.run();
  } catch (error) {
    failed++;
    console.log(
      `- FAILED to complete: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    continue;
  }
  console.log(`(${((performance.now() - started) / 1000).toFixed(1)} s)`);
  if (results.length === 0) {
    failed++;
    console.log("- FAILED: the bench measured nothing");
  }
  for (const r of results) {
    const ratio = r.baseline ? r.value / r.baseline : undefined;
    const measured = Number.isFinite(r.value) && (r.baseline === undefined || Number.isFinite(r.baseline));
    const pass = smoke
      ? measured
      : (r.maxRatio === undefined || (ratio !== undefined && ratio <= r.maxRatio)) &&
        (r.maxValue === undefined || r.value <= r.maxValue) &&
        (r.minValue === undefined || r.value >= r.minValue);
    if (!pass) failed++;
    const parts = [`${r.name}: ${fmt(r.value)} ${r.unit}`];
    if (r.baseline !== undefined)
      parts.push(`baseline ${fmt(r.baseline)} ${r.unit}`, `ratio ${fmt(ratio ?? 0)}`);
    if (r.maxRatio !== undefined) parts.push(`target ratio <= ${r.maxRatio}`);
    if (r.maxValue !== undefined) parts.push(`target <= ${r.maxValue}`);
    if (r.minValue !== undefined) parts.push(`target >= ${r.minValue}`);
    if (smoke) parts.push(pass ? "completed (smoke: targets not judged)" : "FAILED: no measurement");
    else parts.push(pass ? "OK" : "MISSED");
    console.log(`- ${parts.join(" | ")}${r.note ? `  (${r.note})` : ""}`);
  }
}
if (smoke)
  console.log(
    `\n${failed === 0 ? "every bench completed (smoke)" : `${failed} bench result(s) failed (smoke)`}`,
  );
else console.log(`\n${failed === 0 ? "all targets met" : `${failed} target(s) missed`}`);
process.exitCode = failed === 0 ? 0 : 1;

function fmt(n: number): string {
  return Math.abs(n) >= 100 ? n.toFixed(0) : n.toPrecision(3);
}
