// Memory view speed (issue 17): building the injected view of a group memory file of 10,000
// entries (read from disk, parsed, merged, ranked and cut to the budget) must take under 50 ms and
// stay within its token budget. The file mixes repeated advice (merged with counts) and distinct
// advice (most of it left out for the budget), as months of overnight runs would write it. The
// raw baseline in the same run is reading the file and splitting it into entries, for information.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatEntry, parseEntries } from "../runner/memory/entries.ts";
import { estimateTokens, readMemoryView } from "../runner/memory/view.ts";
import { BUILTIN_SITE_POLICY } from "../runner/policy/site.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const ENTRIES = scaled(10_000, 100);
const REPEATS = scaled(15, 1);

export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), "scifi-memory-bench-"));
  try {
    const file = join(dir, "group.md");
    writeFileSync(file, corpus());
    const budget = BUILTIN_SITE_POLICY.memoryTokens.group;
    readMemoryView(file, { budgetTokens: budget }); // warm-up: module loading and JIT
    let best = Number.POSITIVE_INFINITY;
    let view = readMemoryView(file, { budgetTokens: budget });
    for (let i = 0; i < REPEATS; i++) {
      const start = performance.now();
      view = readMemoryView(file, { budgetTokens: budget });
      best = Math.min(best, performance.now() - start);
    }
    let raw = Number.POSITIVE_INFINITY;
    for (let i = 0; i < REPEATS; i++) {
      const start = performance.now();
      parseEntries(readFileSync(file, "utf8"));
      raw = Math.min(raw, performance.now() - start);
    }
    return [
      {
        name: `build the group memory view from ${ENTRIES} entries (best of ${REPEATS})`,
        value: best,
        unit: "ms",
        baseline: raw,
        maxValue: 50,
        note: `${view.items.length} suggestions in the view, ${view.omitted} left out; baseline = read + split into entries, ratio for information`,
      },
      {
        name: "the view's estimated tokens",
        value: estimateTokens(view.text),
        unit: "tokens",
        maxValue: budget,
        note: `budget ${budget} (site policy memory.groupTokens default)`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 10,000 entries: a third repeat 20 pieces of advice in varied spelling, the rest are distinct. */
function corpus(): string {
  const common = Array.from({ length: 20 }, (_, i) => `Compile module ${i} before the files that use it`);
  const parts: string[] = [];
  const start = Date.parse("2026-01-01T00:00:00Z");
  for (let i = 0; i < ENTRIES; i++) {
    const runId = `20260101-000000-task-${i}`;
    const advice =
      i % 3 === 0
        ? [i % 2 ? (common[i % 20] ?? "") : `${(common[i % 20] ?? "").toUpperCase()}.`]
        : [
            `Run ${i} found that step ${i} needs flag -O${i % 4} and input set ${i * 7}.`,
            `Cache key ${i} is stale.`,
          ];
    parts.push(
      formatEntry({
        id: `${runId}/final/group`,
        time: new Date(start + i * 60_000).toISOString(),
        runId,
        role: "final_review",
        title: `task-${i}: passed after 1 iteration(s)`,
        body: advice.map((a) => `- ${a}`).join("\n"),
      }),
    );
  }
  return parts.join("");
}
