// `npm run bench`: runs every bench/*.bench.ts (or the ones named on the command line) and prints
// each measurement as a ratio against the raw baseline measured in the same run.
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
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

let failed = 0;
for (const file of files) {
  const mod = (await import(pathToFileURL(join(dir, file)).href)) as { run: () => Promise<BenchResult[]> };
  console.log(`\n## ${basename(file, ".bench.ts")}`);
  for (const r of await mod.run()) {
    const ratio = r.baseline ? r.value / r.baseline : undefined;
    const pass =
      (r.maxRatio === undefined || (ratio !== undefined && ratio <= r.maxRatio)) &&
      (r.maxValue === undefined || r.value <= r.maxValue) &&
      (r.minValue === undefined || r.value >= r.minValue);
    if (!pass) failed++;
    const parts = [`${r.name}: ${fmt(r.value)} ${r.unit}`];
    if (r.baseline !== undefined)
      parts.push(`baseline ${fmt(r.baseline)} ${r.unit}`, `ratio ${fmt(ratio ?? 0)}`);
    if (r.maxRatio !== undefined) parts.push(`target ratio <= ${r.maxRatio}`);
    if (r.maxValue !== undefined) parts.push(`target <= ${r.maxValue}`);
    if (r.minValue !== undefined) parts.push(`target >= ${r.minValue}`);
    parts.push(pass ? "OK" : "MISSED");
    console.log(`- ${parts.join(" | ")}${r.note ? `  (${r.note})` : ""}`);
  }
}
console.log(`\n${failed === 0 ? "all targets met" : `${failed} target(s) missed`}`);
process.exitCode = failed === 0 ? 0 : 1;

function fmt(n: number): string {
  return Math.abs(n) >= 100 ? n.toFixed(0) : n.toPrecision(3);
}
