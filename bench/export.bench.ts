// Export benchmark: a synthetic run folder whose tape holds 20,000 calls (work passes of 40 calls
// with a growing history, tool calls and results, as the gateway writes them), exported to ATIF
// against reading and verifying the same tape line by line (the least an export that vouches for
// its input can do), each in a process of its own. Targets: at most 2x that floor; and streaming:
// the export's peak memory at 20,000 calls at most 1.25x its peak at 5,000 (flat in tape length).
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuditTape } from "../runner/audit/tape.ts";
import { RUN_END_EVENT, type TapeContentBlock, type TapeRequest } from "../runner/audit/types.ts";
import { freezeDeep } from "../runner/frozen.ts";
import { sha256 } from "../runner/sha256.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const PER_PASS = 40;
const SMALL_CALLS = scaled(5_000, 200);
const LARGE_CALLS = scaled(20_000, 800);
const count = (n: number) => n.toLocaleString("en");
const SYSTEM = `You are the work agent. ${"Follow the plan; use the tools; report done or a blocker. ".repeat(40)}`;
const TOOLS: TapeRequest["tools"] = ["bash", "read_file", "edit_file", "grep", "report_done"].map((name) => ({
  name,
  description: `The ${name} tool. ${"It runs in the sandbox and returns its output. ".repeat(6)}`,
  inputSchema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
}));

type Message = TapeRequest["messages"][number];

/** A run folder at `dir` whose tape holds `calls` calls (and the history and state that anchor it). */
export function makeRun(dir: string, calls: number): void {
  mkdirSync(dir, { recursive: true });
  const runId = `bench-export-${calls}`;
  const tape = new AuditTape(join(dir, "audit.jsonl"), { runId, key: null });
  const history: string[] = [];
  let seq = 0;
  for (let done = 0, iteration = 1; done < calls; iteration++) {
    history.push(
      JSON.stringify({
        seq: ++seq,
        time: new Date().toISOString(),
        type: "prescan",
        iteration,
        node: "root",
        rank: 1,
        skills: [],
        direction: "d",
      }),
    );
    let messages: readonly Message[] = freezeDeep([
      { role: "user", content: [{ type: "text", text: `Iteration ${iteration}: do the task.` }] },
    ]);
    for (let step = 0; step < PER_PASS && done < calls; step++, done++) {
      const id = `toolu_${iteration}_${step}`;
      const response: TapeContentBlock[] = [
        { type: "text", text: `Step ${step}: running the next command to check the build output.` },
        {
          type: "tool_use",
          id,
          name: "bash",
          input: { command: `make -C build target_${step} && ./build/run --case ${step}` },
        },
      ];
      tape.append({
        kind: "call",
        role: "work",
        iteration,
        step,
        provider: "scripted",
        model: "scripted-bench",
        entry: "scripted-bench",
        request: { kind: "work", rank: 1, system: SYSTEM, messages: messages as Message[], tools: TOOLS },
        response: { content: response, stopReason: "tool_use" },
        usage: {
          input: 900 + step * 120,
          output: 60,
          cacheWrite: 0,
          cacheRead: 800 + step * 100,
          reasoning: 0,
        },
        costUsd: 0.0001,
        latencyMs: 3,
        attempts: [],
      });
      const result = `case ${step}: ${"ok 0.00123 0.00456 0.00789\n".repeat(12)}exit 0`;
      messages = freezeDeep([
        ...messages,
        { role: "assistant", content: response },
        { role: "user", content: [{ type: "tool_result", toolUseId: id, content: result }] },
      ]);
    }
  }
  // The tape's own last word, as the runner writes it (run/session/session.ts end): an export requires it.
  tape.append({ kind: "event", event: RUN_END_EVENT, data: { outcome: "passed", reason: "bench" } });
  tape.close();
  const lines = readFileSync(join(dir, "audit.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "");
  const head = { seq: lines.length - 1, hash: sha256(lines[lines.length - 1] as string) };
  history.push(
    JSON.stringify({
      seq: ++seq,
      time: new Date().toISOString(),
      type: "run_end",
      outcome: "passed",
      reason: "bench",
      audit: head,
    }),
  );
  writeFileSync(join(dir, "history.jsonl"), `${history.join("\n")}\n`);
  writeFileSync(
    join(dir, "state.json"),
    JSON.stringify({
      version: 1,
      runId,
      model: "scripted:bench",
      auditHead: head,
      outcome: { status: "passed", reason: "bench" },
    }),
  );
}

interface Measured {
  ms: number;
  maxRssKb: number;
  peakHeapKb: number;
}

function measure(mode: "floor" | "atif", dir: string, out: string, sample = false): Measured {
  const child = spawnSync(
    process.execPath,
    [...(sample ? ["--expose-gc"] : []), join(import.meta.dirname, "export-child.ts"), mode, dir, out],
    { encoding: "utf8", maxBuffer: 1 << 20, env: { ...process.env, BENCH_SAMPLE: sample ? "1" : "0" } },
  );
  if (child.status !== 0) throw new Error(`bench/export-child.ts ${mode} failed: ${child.stderr}`);
  return JSON.parse(child.stdout) as Measured;
}

export async function run(): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), "scifi-bench-export-"));
  try {
    const small = join(root, "small");
    const large = join(root, "large");
    makeRun(small, SMALL_CALLS);
    makeRun(large, LARGE_CALLS);
    // Best of three for time (the machine is shared).
    const best = (mode: "floor" | "atif", dir: string) =>
      Math.min(...[0, 1, 2].map(() => measure(mode, dir, join(root, `${mode}.jsonl`)).ms));
    const floor = best("floor", large);
    const atif = best("atif", large);
    // Memory: the live heap after full collections while the export runs, at two tape lengths.
    const memSmall = measure("atif", small, join(root, "m.jsonl"), true);
    const memLarge = measure("atif", large, join(root, "m.jsonl"), true);
    return [
      {
        name: `export ${count(LARGE_CALLS)} calls to ATIF (CPU ms)`,
        value: atif,
        unit: "ms",
        baseline: floor,
        maxRatio: 2,
        note: "baseline: reading and verifying the same tape line by line",
      },
      {
        name: `export live heap at ${count(LARGE_CALLS)} calls vs ${count(SMALL_CALLS)} (MiB)`,
        value: memLarge.peakHeapKb / 1024,
        unit: "MiB",
        baseline: memSmall.peakHeapKb / 1024,
        maxRatio: 1.25,
        note: `streaming; peak RSS ${(memSmall.maxRssKb / 1024).toFixed(0)} and ${(memLarge.maxRssKb / 1024).toFixed(0)} MiB`,
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
