// The context budget (runner/run/session/context-budget.ts) on long passes under small scripted windows,
// the model real over HTTP (the scripted server, Anthropic wire format with its prompt-cache
// simulation), tools a local `emit` that returns large outputs (no sandbox: the runner's side is
// what is measured). Targets (issue 41):
// 1. a compacting 200-call session: the cache-read share at least 0.9 of the most any caching could
//    reach for the requests actually sent (per request, the longest prefix it shares with any
//    earlier request);
// 2. the elision adds under 1 ms per call (estimate + compaction, timed around the keeper);
// 3. a 500-call night (10 passes of 50 calls, 16 KB outputs under a 24k window), in a process of
//    its own: peak RSS (after a full collection at the end of each pass) under 300 MB, its live heap
//    flat (last pass at most 1.1x the first), and the tape growing linearly (bytes a pass in the
//    second half at most 1.5x the first).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promptPrefixes } from "../runner/audit/prefix-cache.ts";
import { AuditTape } from "../runner/audit/tape.ts";
import type { CallRecord } from "../runner/audit/types.ts";
import { readTape } from "../runner/audit/verify.ts";
import { createModel } from "../runner/llm/create-model.ts";
import { ContextKeeper } from "../runner/run/session/context-budget.ts";
import { runPass } from "../runner/run/session/conversation.ts";
import { DEFAULT_LIMITS, RunBudget } from "../runner/run/session/limits.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { defineToolSet } from "../test/run/session/context-budget-tools.ts";
import { scaled } from "./size.ts";

const SESSION_CALLS = scaled(200, 30);
const NIGHT_PASSES = scaled(10, 2);
const NIGHT_CALLS_PER_PASS = scaled(50, 10);

/** A work script of `passes` passes, each `calls` emits of `chars` characters and a report_done. */
export function script(
  dir: string,
  name: string,
  window: number,
  passes: number,
  calls: number,
  chars: number,
): string {
  const lines = [`context_window: ${window}`, "work:"];
  for (let p = 0; p < passes; p++) {
    for (let i = 0; i < calls; i++)
      lines.push(`  - tool_calls: [{ name: emit, input: { chars: ${chars}, tag: "out-${p}-${i}" } }]`);
    lines.push("  - tool_calls: [{ name: report_done, input: { claim: done, summary: emitted } }]");
  }
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, lines.join("\n"));
  return file;
}

export async function pass(model: Awaited<ReturnType<typeof createModel>>, iteration: number): Promise<void> {
  const { exit } = await runPass({
    model,
    tools: defineToolSet(),
    toolContext: { sandbox: undefined as never, bashTimeoutMs: 1000, maxOutputChars: 20_000 },
    limits: { ...DEFAULT_LIMITS, stepsPerPass: 10_000, toolCallsPerPass: 10_000, maxRepeats: 10_000 },
    budget: new RunBudget({ ...DEFAULT_LIMITS, tokens: 1e12 }),
    request: {
      role: "work",
      kind: "work",
      rank: 1,
      system: "You are the work agent.",
      meta: { runId: "bench", iteration },
    },
    brief: `Iteration ${iteration}: read the build logs, then report done.`,
    textReply: "nudge",
    blockerNudge: () => "report a blocker",
  });
  if (exit.type !== "done") throw new Error(`bench context: the pass ended ${exit.type}`);
}

/** Time spent in the keeper (estimate and fit), summed, while `body` runs. */
async function timedKeeper(body: () => Promise<void>): Promise<number> {
  const proto = ContextKeeper.prototype;
  const fit = proto.fit;
  let ms = 0;
  proto.fit = function (this: ContextKeeper, ...args: Parameters<typeof fit>) {
    const t0 = performance.now();
    try {
      return fit.apply(this, args);
    } finally {
      ms += performance.now() - t0;
    }
  };
  try {
    await body();
  } finally {
    proto.fit = fit;
  }
  return ms;
}

/** Cache reads reported, and the most any cache could have served, over a tape's calls. */
function cacheShares(calls: CallRecord[]): { read: number; bound: number; total: number } {
  const seen = new Set<string>();
  let read = 0;
  let bound = 0;
  let total = 0;
  for (const call of calls) {
    const prefixes = promptPrefixes(
      "anthropic",
      call.wire,
      String((call.wire as { model?: string })?.model ?? ""),
    );
    let best = 0;
    for (const p of prefixes) if (seen.has(p.hash)) best = p.tokens;
    for (const p of prefixes) seen.add(p.hash);
    bound += best;
    read += call.usage.cacheRead;
    total += call.usage.input + call.usage.cacheRead + call.usage.cacheWrite;
  }
  return { read, bound, total };
}

export async function run(): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), "scifi-bench-context-"));
  try {
    // 1 and 2: a compacting session.
    const tapePath = join(root, "session.jsonl");
    const tape = new AuditTape(tapePath, { runId: "bench-session" });
    const model = await createModel(
      `scripted:${script(root, "session", 30_000, 1, SESSION_CALLS, 3000)}`,
      tape,
    );
    const keeperMs = await timedKeeper(() => pass(model, 1));
    await model.close();
    tape.close();
    const calls = readTape(tapePath).filter((r): r is CallRecord => r.kind === "call");
    const shares = cacheShares(calls);

    // 3: a night of passes, in a process of its own (the runner's memory alone, not this bench's).
    const child = spawnSync(
      process.execPath,
      [
        "--expose-gc",
        join(import.meta.dirname, "context-night.ts"),
        root,
        String(NIGHT_PASSES),
        String(NIGHT_CALLS_PER_PASS),
      ],
      { encoding: "utf8", maxBuffer: 1 << 20 },
    );
    if (child.status !== 0) throw new Error(`bench/context-night.ts failed: ${child.stderr}`);
    const { rss, heap, sizes } = JSON.parse(child.stdout) as {
      rss: number[];
      heap: number[];
      sizes: number[];
    };
    const peakRss = Math.max(...rss);
    const half = Math.floor(NIGHT_PASSES / 2);
    const firstHalf = (sizes[half - 1] ?? 0) / half;
    const secondHalf = ((sizes.at(-1) ?? 0) - (sizes[half - 1] ?? 0)) / (NIGHT_PASSES - half);
    return [
      {
        name: `cache-read share of a compacting ${calls.length}-call session, as a share of the most any caching could reach`,
        value: shares.read / shares.bound,
        unit: "of the bound",
        minValue: 0.9,
        note: `read ${shares.read} of ${shares.total} input-side tokens (${(shares.read / shares.total).toFixed(3)}); the bound for the requests actually sent ${shares.bound} (${(shares.bound / shares.total).toFixed(3)})`,
      },
      {
        name: "time the context budget adds per call (estimate and compaction)",
        value: keeperMs / calls.length,
        unit: "ms",
        maxValue: 1,
        note: `${keeperMs.toFixed(1)} ms over ${calls.length} calls`,
      },
      {
        name: `runner peak RSS over a ${NIGHT_PASSES * NIGHT_CALLS_PER_PASS}-call night (${NIGHT_PASSES} passes, 16 KB outputs, 24k window)`,
        value: peakRss / 1024 ** 2,
        unit: "MB",
        maxValue: 300,
      },
      {
        name: "the night's live heap after its last pass against after its first (flat)",
        value: (heap.at(-1) ?? 0) / 1024 ** 2,
        unit: "MiB",
        baseline: (heap[0] ?? 0) / 1024 ** 2,
        maxRatio: 1.1,
        note: "after a full collection at the end of each pass",
      },
      {
        name: "tape bytes a pass, second half of the night against the first (linear growth)",
        value: secondHalf,
        unit: "bytes",
        baseline: firstHalf,
        maxRatio: 1.5,
        note: `the night's tape ${((sizes.at(-1) ?? 0) / 1024 ** 2).toFixed(1)} MiB`,
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
