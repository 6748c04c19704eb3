// Gateway benchmark on a 40-step scripted Anthropic-format session with a growing history:
// 1. cache-read share of input-side tokens, recomputed FROM THE TAPE by prefix matching up to the
//    breakpoints of each recorded wire body (target: at least 0.99 of the bound no caching scheme
//    can beat for this session, 1 - final context / all input; the CodeScribe loop reached 0.91-0.95);
// 2. gateway time per call (adapter, retries bookkeeping, redaction, hash chain, fsync) added to a
//    direct SDK call with the same body to the same scripted server: at most +0.5 ms p50 of the
//    paired differences, over all calls and over the longest histories alone (flat in history
//    length). Not a ratio: against an instant scripted server a fixed cost per call reads as a
//    larger ratio the faster the baseline answers, which says little about the gateway.
import {
  closeSync,
  fsync,
  fsyncSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { fillTemplate } from "../runner/agents/prompt.ts";
import { workSystem } from "../runner/agents/work.ts";
import { cacheFromWire, summarizeTape } from "../runner/audit/summary.ts";
import { AuditTape } from "../runner/audit/tape.ts";
import type { AuditEntry } from "../runner/audit/types.ts";
import { readTape } from "../runner/audit/verify.ts";
import { freezeDeep } from "../runner/frozen.ts";
import { createModel } from "../runner/llm/create-model.ts";
import { buildAnthropicBody } from "../runner/llm/providers/anthropic.ts";
import { ROLE_HEADER, ScriptedServer } from "../runner/llm/scripted/server.ts";
import type { ContentBlock, Message, ModelRequest, ToolSpec } from "../runner/llm/types.ts";
import { toolSpecs, workTools } from "../runner/tools/registry.ts";
import { capText } from "../runner/tools/truncate.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const STEPS = scaled(40, 8);
const REPEATS = scaled(8, 1);
const ROOT = join(import.meta.dirname, "..");

/** The real work agent's system prompt and tool schemas, exactly as a run sends them. */
const SYSTEM = workSystem();
const TOOLS: ToolSpec[] = toolSpecs(workTools);
/** The real work brief template filled from a shipped example task. */
const BRIEF = workBriefFor(
  readFileSync(join(ROOT, "tasks/examples/verilator-counter-debug/task.md"), "utf8"),
);
/** Real tool-output cap of a run (runner/run/session/limits.ts default). */
const TOOL_OUTPUT_CHARS = 20_000;

function workBriefFor(sam: string): string {
  const section = (name: string) =>
    new RegExp(`## ${name}\\n([\\s\\S]*?)(?=\\n## |$)`).exec(sam)?.[1]?.trim() ?? "";
  return fillTemplate("work.input.md", {
    title: "Debug the modulo-N event counter",
    node: "root",
    todo: section("To-do"),
    expectation: section("Expectation"),
    parentContext: `## Context\n\n${section("Context")}`,
    context: "The testbench output names the first mismatching cycle; start there.",
    plan: "1. Run the testbench. 2. Read rtl/counter.v. 3. Fix the wrap condition. 4. Re-run.",
    skills: "",
  });
}

/**
 * A realistic mix of tool calls, repeating every five steps: reading a source file (real files of
 * this repository, capped like a run caps them), a build/test log, an edit, a short command, a grep.
 * The files are named, not listed from the folder, so a new file there does not change the session.
 */
const SOURCES = [
  "checks/checks.ts",
  "session/conversation.ts",
  "session/display.ts",
  "session/limits.ts",
  "session/session.ts",
  "setup.ts",
  "start.ts",
].map((f) => `runner/run/${f}`);

interface BenchCall {
  name: string;
  input: Record<string, unknown>;
  output: string;
}

function callAt(step: number): BenchCall {
  const n = step + 1;
  switch (step % 5) {
    case 0: {
      const path = SOURCES[(step / 5) % SOURCES.length] ?? "runner/run/setup.ts";
      return {
        name: "read_file",
        input: { path },
        output: capText(readFileSync(join(ROOT, path), "utf8"), TOOL_OUTPUT_CHARS),
      };
    }
    case 1:
      return { name: "bash", input: { command: "sh checks/run_tb.sh" }, output: testLog(n) };
    case 2:
      return {
        name: "edit_file",
        input: { path: "rtl/counter.v", old: `count == N`, new: `count == N - 1` },
        output: `Edited rtl/counter.v: 1 replacement (line ${20 + n}).`,
      };
    case 3:
      return {
        name: "bash",
        input: { command: "git diff --stat" },
        output: ` rtl/counter.v | ${(n % 4) + 1} +-\n 1 file changed`,
      };
    default:
      return { name: "grep", input: { pattern: "wrap", path: "rtl" }, output: grepHits(n) };
  }
}

/** A Verilator build and simulation log of a size such logs have (1-3 KB). */
function testLog(n: number): string {
  const build = Array.from(
    { length: 8 + (n % 5) },
    (_, i) =>
      `g++ -Os -I. -MMD -I/usr/share/verilator/include -c -o Vcounter__ALL${i}.o Vcounter__ALL${i}.cpp`,
  );
  const sim = Array.from(
    { length: 10 + (n % 7) },
    (_, i) =>
      `cycle ${i * 10 + n}: en=1 count=${(i + n) % 10} wrap=${(i + n) % 10 === 9 ? 1 : 0} ref_count=${(i + n) % 10}`,
  );
  const verdict =
    n > 20 ? "PASS: 4096 cycles match the reference" : `MISMATCH at cycle ${90 + n}: count=10 ref_count=0`;
  return [`- V e r i l a t i o n   R e p o r t: Verilator 5.032`, ...build, ...sim, verdict].join("\n");
}

function grepHits(n: number): string {
  return Array.from(
    { length: 6 + (n % 4) },
    (_, i) => `rtl/counter.v:${12 + i * 3}:      wrap <= (count == N - 1) && en; // ${i}`,
  ).join("\n");
}

function scriptText(): string {
  const steps = Array.from({ length: STEPS - 1 }, (_, i) => {
    const call = callAt(i);
    return `  - text: ${JSON.stringify(reasoning(i))}\n    tool_calls:\n      - name: ${call.name}\n        input: ${JSON.stringify(call.input)}\n`;
  });
  return `# Scripted model (labelled scripted): 40-step benchmark session\nwork:\n${steps.join("")}  - text: "All checks pass; the counter wraps at N-1 and wrap is high for one cycle."\n`;
}

/** What the model says before each tool call (a couple of sentences, as agents write). */
function reasoning(step: number): string {
  return `Step ${step + 1}: the last output shows the counter state around the wrap; next I ${callAt(step).name.replace("_", " ")} to confirm where count reaches N before wrap is raised, then decide the smallest fix.`;
}

function requestAt(history: Message[], step: number): ModelRequest {
  return {
    role: "work",
    kind: "work",
    rank: 1,
    system: SYSTEM,
    tools: TOOLS,
    messages: history,
    // The same two lines the loop sends (runner/run/session/conversation.ts).
    workspaceContext: [
      `Step ${step + 1} of ${STEPS}; tool calls left in this pass: ${2 * STEPS - step}.`,
      `Run budget used: ${step * 7} of 2700 s, ${step * 9000} of 2000000 tokens, USD ${(step * 0.031).toFixed(4)} of 3.`,
    ].join("\n"),
    meta: { runId: "bench", iteration: 1, step },
  };
}

function nextHistory(history: Message[], content: Message["content"], step: number): void {
  const call = content.find((b) => b.type === "tool_use");
  if (call?.type !== "tool_use") return;
  history.push({ role: "assistant", content });
  history.push({
    role: "user",
    content: [{ type: "tool_result", toolUseId: call.id, content: callAt(step).output }],
  });
}

/** One session driven step by step, so the gateway and the baseline can advance in lockstep. */
interface Session {
  step(step: number): Promise<number>;
  close(): Promise<void>;
}

/** The real tape, timing each call record it writes (for the breakdown in the report). */
class TimedTape extends AuditTape {
  readonly recordMs: number[] = [];

  override append(entry: AuditEntry): number {
    const t0 = performance.now();
    const seq = super.append(entry);
    if (entry.kind === "call") this.recordMs.push(performance.now() - t0);
    return seq;
  }
}

/**
 * The floor any durable record sets: the same line written with one write(2) to a file on the same
 * disk and its fsync started, as the tape does, with no JSON, redaction or hashing.
 */
class DurableWriteFloor {
  readonly ms: number[] = [];
  readonly #fd: number;
  #syncing = false;

  constructor(path: string) {
    this.#fd = openSync(path, "a", 0o600);
  }

  write(line: string): void {
    const t0 = performance.now();
    writeSync(this.#fd, `${line}\n`);
    if (!this.#syncing) {
      this.#syncing = true;
      fsync(this.#fd, () => {
        this.#syncing = false;
      });
    }
    this.ms.push(performance.now() - t0);
  }

  close(): void {
    fsyncSync(this.#fd);
    closeSync(this.#fd);
  }
}

async function gatewaySession(script: string, tape: TimedTape): Promise<Session> {
  const model = await createModel(`scripted:${script}`, tape);
  const history: Message[] = [{ role: "user", content: [{ type: "text", text: BRIEF }] }];
  return {
    async step(step) {
      const t0 = performance.now();
      const reply = await model.complete(requestAt(history, step));
      const elapsed = performance.now() - t0;
      nextHistory(history, reply.content, step);
      return elapsed;
    },
    async close() {
      await model.close();
      tape.close();
    },
  };
}

function lastLine(path: string): string {
  const text = readFileSync(path, "utf8").trimEnd();
  return text.slice(text.lastIndexOf("\n") + 1);
}

/** The raw baseline: the same bodies straight through the SDK, no gateway, no tape. */
async function directSession(script: string): Promise<Session> {
  const server = await ScriptedServer.start(script);
  const client = new Anthropic({ apiKey: "scripted-no-key", baseURL: server.baseURL, maxRetries: 0 });
  const options = { model: "scripted-bench", apiKey: "x", thinking: { type: "adaptive" } as const };
  const history: Message[] = [{ role: "user", content: [{ type: "text", text: BRIEF }] }];
  return {
    async step(step) {
      const t0 = performance.now();
      // Sent history frozen as the gateway freezes it, so both sides build the body alike (each
      // message converted once); what differs is the gateway's own work.
      for (const message of history) freezeDeep(message);
      const body = buildAnthropicBody(requestAt(history, step), options);
      const reply = await client.messages.create(body, { headers: { [ROLE_HEADER]: "work" } });
      const elapsed = performance.now() - t0;
      const content = reply.content.flatMap((b): ContentBlock[] =>
        b.type === "tool_use"
          ? [{ type: "tool_use" as const, id: b.id, name: b.name, input: b.input as Record<string, unknown> }]
          : b.type === "text"
            ? [{ type: "text" as const, text: b.text }]
            : [],
      );
      nextHistory(history, content, step);
      return elapsed;
    },
    close: () => server.close(),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), "scifi-bench-gateway-"));
  const script = join(dir, "bench.yaml");
  writeFileSync(script, scriptText());
  try {
    const gatewayTimes: number[] = [];
    const directTimes: number[] = [];
    const recordTimes: number[] = [];
    const floorTimes: number[] = [];
    let tape = "";
    for (let rep = 0; rep <= REPEATS; rep++) {
      tape = join(dir, `gateway-${rep}`, "audit.jsonl");
      const timed = new TimedTape(tape, { runId: `bench-${rep}` });
      const gateway = await gatewaySession(script, timed);
      const direct = await directSession(script);
      const floor = new DurableWriteFloor(join(dir, `floor-${rep}.jsonl`));
      // Lockstep, alternating which goes first, so load on a shared machine hits both sides alike.
      for (let step = 0; step < STEPS; step++) {
        const pair =
          step % 2 === 0
            ? [await gateway.step(step), await direct.step(step)]
            : [await direct.step(step), await gateway.step(step)].reverse();
        // The same line again, written bare: what durability alone costs (outside both timings).
        floor.write(lastLine(tape));
        // Repeat 0 is the warm-up (JIT, sockets) and is not counted.
        if (rep > 0) {
          gatewayTimes.push(pair[0] ?? 0);
          directTimes.push(pair[1] ?? 0);
        }
      }
      await gateway.close();
      await direct.close();
      floor.close();
      if (rep > 0) {
        recordTimes.push(...timed.recordMs);
        floorTimes.push(...floor.ms);
      }
    }
    const records = readTape(tape);
    const tapeBytes = statSync(tape).size;
    const fromWire = cacheFromWire(records);
    const reported = summarizeTape(records).totals;
    const inputSide = fromWire.input + fromWire.cacheWrite + fromWire.cacheRead;
    // No caching scheme can beat this: every token must be sent uncached or written once.
    const last = records.filter((r) => r.kind === "call").at(-1);
    const lastSize =
      last?.kind === "call" ? last.usage.input + last.usage.cacheWrite + last.usage.cacheRead : 0;
    const bound = 1 - lastSize / inputSide;
    // Paired differences per step (the two sides ran back to back), all and for the last quarter.
    const added = gatewayTimes.map((g, i) => g - (directTimes[i] ?? 0));
    const longest = added.filter((_, i) => i % STEPS >= STEPS - STEPS / 4);
    return [
      {
        name: "cache-read share of input-side tokens (from the tape, prefix matching)",
        value: fromWire.share,
        unit: "share",
        // 0.99 of the bound, rounded down to the printed precision so the target reads as printed.
        minValue: Math.floor(0.99 * bound * 1e4) / 1e4,
        note: `${(fromWire.share / bound).toFixed(3)} of the most any caching can reach here; ${STEPS} calls, ${inputSide} input-side tokens: ${fromWire.cacheRead} read, ${fromWire.cacheWrite} written, ${fromWire.input} uncached; server-reported share ${reported.cacheReadShare.toFixed(4)}; upper bound for any caching of this session (1 - final context / all input) ${bound.toFixed(4)}`,
      },
      {
        name: "time the gateway adds per call (p50 of paired differences, all calls)",
        value: median(added),
        unit: "ms",
        maxValue: 0.5,
        note: `gateway ${median(gatewayTimes).toFixed(2)} ms, direct ${median(directTimes).toFixed(2)} ms (medians); of the added time, writing the audit record ${median(recordTimes).toFixed(2)} ms (median), and of that the bare write + fsync start of the same line on the same disk ${median(floorTimes).toFixed(2)} ms`,
      },
      {
        name: `time the gateway adds per call at the longest histories (p50, steps ${STEPS - STEPS / 4 + 1}-${STEPS})`,
        value: median(longest),
        unit: "ms",
        maxValue: 0.5,
        note: `flat in history length: the same target as over all calls; direct SDK call with the same body to the same instant scripted server; ${REPEATS}x${STEPS} calls each, lockstep; the gateway adds the incremental record (new content only: ${(tapeBytes / records.length / 1024).toFixed(1)} KiB a record on average, the first one holding system prompt and tools; full records would average ${(records.reduce((n, r) => n + JSON.stringify(r).length, 0) / records.length / 1024).toFixed(1)} KiB), redaction, hash chain, write (fsync overlapped)`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
