// The night of bench/context.bench.ts, in a process of its own so its peak RSS is the runner's:
// node bench/context-night.ts DIR PASSES CALLS_PER_PASS -> {"sizes", "rss", "heap"}: tape bytes, RSS and live heap after each pass (run with --expose-gc)
import { statSync } from "node:fs";
import { join } from "node:path";
import { AuditTape } from "../runner/audit/tape.ts";
import { createModel } from "../runner/llm/create-model.ts";
import { pass, script } from "./context.bench.ts";

const [dir = ".", passes = "10", calls = "50"] = process.argv.slice(2);
const tapePath = join(dir, "night.jsonl");
const tape = new AuditTape(tapePath, { runId: "bench-night" });
const model = await createModel(
  `scripted:${script(dir, "night", 24_000, Number(passes), Number(calls), 16_000)}`,
  tape,
);
const sizes: number[] = [];
const rss: number[] = [];
const heap: number[] = [];
for (let i = 1; i <= Number(passes); i++) {
  await pass(model, i);
  sizes.push(statSync(tapePath).size);
  // After a full collection: what the runner holds, not garbage V8 has not yet returned.
  (globalThis as { gc?: () => void }).gc?.();
  rss.push(process.memoryUsage().rss);
  heap.push(process.memoryUsage().heapUsed);
}
await model.close();
tape.close();
process.stdout.write(JSON.stringify({ sizes, rss, heap }));
