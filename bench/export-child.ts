// One measurement of bench/export.bench.ts in a process of its own (its peak RSS is the
// measurement's alone): `floor` reads and verifies a tape line by line (chain, anchors, references
// expanded), `atif` exports the same run folder to ATIF. Prints {ms, maxRssKb, items} as JSON.
import { createReadStream } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { readAnchors } from "../runner/audit/anchor.ts";
import { RECENT_CALLS } from "../runner/audit/tape.ts";
import { LineVerifier } from "../runner/audit/verify.ts";
import { runExport } from "../runner/export/export.ts";

const [mode, dir, out] = process.argv.slice(2) as [string, string, string];
const start = performance.now();
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
const ms = performance.now() - start;
process.stdout.write(`${JSON.stringify({ ms, maxRssKb: process.resourceUsage().maxRSS, items })}\n`);
