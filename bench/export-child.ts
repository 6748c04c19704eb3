// One measurement of bench/export.bench.ts in a process of its own (its peak RSS is the
// measurement's alone): `floor` reads and verifies a tape line by line (chain, anchors, references
// expanded), `atif` exports the same run folder to ATIF. Prints {ms, maxRssKb, peakHeapKb, items}
// as JSON; `peakHeapKb` (with --expose-gc and BENCH_SAMPLE=1): the most live heap seen after a full
// collection every 25 ms, the memory the export holds (RSS also counts garbage not yet collected).
import { createReadStream } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { readAnchors } from "../runner/audit/anchor.ts";
import { RECENT_CALLS } from "../runner/audit/tape.ts";
import { LineVerifier } from "../runner/audit/verify.ts";
import { runExport } from "../runner/export/export.ts";

const [mode, dir, out] = process.argv.slice(2) as [string, string, string];
const gc = (globalThis as { gc?: () => void }).gc;
let peakHeap = 0;
const sampler =
  process.env.BENCH_SAMPLE === "1" && gc
    ? setInterval(() => {
        gc();
        peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
      }, 25)
    : undefined;
// CPU time (user + system) rather than wall time: the bench machine is shared, and CPU time is
// what the export costs whatever else runs beside it.
const start = process.cpuUsage();
let items = 0;
if (mode === "floor") {
  const verifier = new LineVerifier({ anchors: readAnchors(dir).anchors, keep: RECENT_CALLS });
  const lines = createInterface({
    input: createReadStream(join(dir, "audit.jsonl"), { encoding: "utf8" }),
    crlfDelay: Infinity,
  });
  for await (const line of lines) {
    const checked = verifier.next(line);
    if (!checked.ok) throw new Error(checked.reason);
    items++;
  }
  const end = verifier.end();
  if (!end.ok) throw new Error(end.reason);
} else {
  const summary = await runExport({ inputs: [dir], format: "atif", home: dir, out });
  items = summary.items;
}
const used = process.cpuUsage(start);
const ms = (used.user + used.system) / 1000;
if (sampler) clearInterval(sampler);
process.stdout.write(
  `${JSON.stringify({ ms, maxRssKb: process.resourceUsage().maxRSS, peakHeapKb: peakHeap / 1024, items })}\n`,
);
