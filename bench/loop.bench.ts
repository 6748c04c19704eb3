// Orchestration overhead per tool call: the work pass (loop + limits + gateway + audit tape +
// scripted model over HTTP answering instantly + sandbox exec) against a raw exec of the same
// command in the same sandbox, measured in the same run. Target: ratio <= 1.15.
// Integrity's cost per tool call (issue 39: "within 1.02x of before"): in the same passes, tool
// calls with the session's per-call integrity recording (runner/run/integrity.ts ToolCallIntegrity:
// the call named from the tape's head, its result scanned against 20 protected files) take turns
// with calls without it, a command with a 7 KB output. The lower quartiles are compared: load from
// other processes only adds time, so the lower part of each distribution is where a cost the
// recording adds to every call shows, and the noise least. Also the time spent inside the recording
// itself, against the whole call. Target: both ratios <= 1.02.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuditTape } from "../runner/audit/tape.ts";
import { createModel } from "../runner/llm/create-model.ts";
import { HistoryTape } from "../runner/memory/history.ts";
import { resolveSpec } from "../runner/policy/resolve.ts";
import { loadSitePolicy, sitePolicyPath } from "../runner/policy/site.ts";
import { type PassEvent, runPass } from "../runner/run/conversation.ts";
import { IntegrityRecorder, ToolCallIntegrity } from "../runner/run/integrity.ts";
import { DEFAULT_LIMITS, RunBudget } from "../runner/run/limits.ts";
import type { PristineSet } from "../runner/run-folder/state.ts";
import { parseSamSync } from "../runner/sam/parse.ts";
import { getBackend } from "../runner/sandbox/registry.ts";
import type { Sandbox } from "../runner/sandbox/types.ts";
import { workTools } from "../runner/tools/registry.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const STEPS = scaled(25, 3);
const COMMAND = "echo bench";
const ROUNDS = scaled(3, 1);
/** Integrity on and off, call by call: passes of INTEGRITY_STEPS bash calls. */
const INTEGRITY_ROUNDS = scaled(8, 1);
const INTEGRITY_STEPS = scaled(40, 5);
/** 7 KB over 1,000 lines: every line goes through the refusal scan. */
const INTEGRITY_COMMAND = "seq 100001 101000; echo";

export async function run(): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), "scifi-bench-loop-"));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  mkdirSync(taskDir);
  const samFile = join(taskDir, "task.md");
  writeFileSync(
    samFile,
    `---\nname: bench\nimage: ${process.env.SCIFI_BENCH_IMAGE ?? "scifi-sci:local"}\n---\n# Bench\n\n## To-do\nRun commands.\n\n## Expectation\n- Done.\n`,
  );
  const parsed = parseSamSync(samFile);
  if (!parsed.ok) throw new Error(`bench SAM invalid: ${JSON.stringify(parsed.diagnostics)}`);
  const site = loadSitePolicy(sitePolicyPath(home), false).policy;
  const spec = resolveSpec(parsed.sam, site, { home, runId: `bench-loop-${process.pid}` });
  const backend = await getBackend("docker");
  const sandbox = await backend.start(spec);
  try {
    await sandbox.exec(COMMAND); // warm-up
    const raw: number[] = [];
    const loop: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      raw.push(await rawPerCall(sandbox));
      loop.push(await loopPerCall(sandbox, root, round));
    }
    const best = (xs: number[]) => Math.min(...xs);
    const integrity = await integrityCost(sandbox, root);
    return [
      {
        name: "work pass per tool call (scripted model, docker exec)",
        value: best(loop),
        baseline: best(raw),
        unit: "ms",
        maxRatio: 1.15,
        note: `${STEPS} steps of one bash call each, best of ${ROUNDS} rounds`,
      },
      ...integrity,
    ];
  } finally {
    await sandbox.stop();
  }
}

async function rawPerCall(sandbox: Sandbox): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < STEPS; i++) await sandbox.exec(COMMAND, { timeoutMs: 60_000 });
  return (performance.now() - start) / STEPS;
}

/**
 * One pass, its tool calls taking turns with and without the session's per-call integrity
 * recording (call by call, the first of each round alternating), so both sides see the same load;
 * the time of each call (from the end of the one before to its own end: the model's turn, the
 * exec, the events), and the time spent inside the recording.
 */
async function integrityCost(sandbox: Sandbox, root: string): Promise<BenchResult[]> {
  const history = new HistoryTape(join(root, "history.jsonl"));
  const on: number[] = [];
  const off: number[] = [];
  const inside: number[] = [];
  for (let round = 0; round < INTEGRITY_ROUNDS; round++) {
    const recorder = new IntegrityRecorder((event) => history.append(event));
    const observer = (audit: AuditTape) => {
      const calls = new ToolCallIntegrity(
        () => audit.head()?.seq ?? -1,
        () => PRISTINE,
        (input) =>
          recorder.record({
            type: "integrity",
            iteration: 1,
            role: "work",
            kind: input.kind,
            attempted: input.attempted,
            rule: input.rule,
            action: input.action,
          }),
      );
      let call = 0;
      let last: number | undefined;
      let spent = 0;
      return (event: PassEvent) => {
        if (event.type !== "tool_start" && event.type !== "tool") return;
        const withIntegrity = (call + round) % 2 === 0;
        if (withIntegrity) {
          const start = performance.now();
          calls.onPassEvent(event);
          spent += performance.now() - start;
        }
        if (event.type !== "tool") return;
        const now = performance.now();
        // The first call carries the pass's start, and the last is report_done: neither is counted.
        if (last !== undefined && event.name === "bash") {
          (withIntegrity ? on : off).push(now - last);
          if (withIntegrity) inside.push(spent);
        }
        spent = 0;
        last = now;
        call++;
      };
    };
    await loopPerCall(sandbox, root, `integrity-${round}`, INTEGRITY_COMMAND, observer, INTEGRITY_STEPS);
    // An honest call is no event: a recorded one would mean the bench measured a defence acting.
    if (recorder.count !== 0) throw new Error(`bench: ${recorder.count} integrity events from honest calls`);
  }
  const low = (xs: number[]) => quantile(xs, 0.25);
  return [
    {
      name: "work pass per tool call, integrity recording on against off (same passes, call by call)",
      value: low(on),
      baseline: low(off),
      unit: "ms",
      maxRatio: 1.02,
      note: `lower quartiles of ${on.length} and ${off.length} bash calls with a 7 KB output (medians ${median(on).toFixed(1)} and ${median(off).toFixed(1)} ms), ${INTEGRITY_ROUNDS} passes`,
    },
    {
      name: "work pass per tool call, of which inside the integrity recording",
      value: median(on),
      baseline: median(on) - median(inside),
      unit: "ms",
      maxRatio: 1.02,
      note: `${median(inside).toFixed(3)} ms a call in the recording (20 protected files; max ${Math.max(...inside).toFixed(3)} ms), medians`,
    },
  ];
}

/** 20 protected files: a SAM, a few sub-SAMs and check assets, as a mid-sized task has. */
const PRISTINE: PristineSet = {
  files: Array.from({ length: 20 }, (_, i) => ({
    rel: i === 0 ? "task.md" : i < 4 ? `sub/part-${i}.md` : `checks/asset-${i}.dat`,
    sha256: "0".repeat(64),
    mode: 0o644,
    kind: i < 4 ? ("sam" as const) : ("asset" as const),
    hidden: i >= 16,
  })),
  folders: ["checks"],
};

function median(xs: readonly number[]): number {
  return quantile(xs, 0.5);
}

/** The q-quantile, interpolated between the two nearest order statistics. */
function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const lo = sorted[Math.floor(at)] as number;
  const hi = sorted[Math.ceil(at)] as number;
  return lo + (hi - lo) * (at - Math.floor(at));
}

async function loopPerCall(
  sandbox: Sandbox,
  root: string,
  round: number | string,
  command = COMMAND,
  /** The pass's event observer, given the pass's audit tape (the session's integrity reads its head). */
  observer?: (audit: AuditTape) => (event: PassEvent) => void,
  stepCount = STEPS,
): Promise<number> {
  const script = join(root, `script-${round}.yaml`);
  const steps = Array.from(
    { length: stepCount },
    (_, i) => `  - tool_calls: [{ name: bash, input: { command: "${command} ${i}" } }]`,
  );
  writeFileSync(
    script,
    `work:\n${steps.join("\n")}\n  - tool_calls: [{ name: report_done, input: { claim: done, summary: done } }]\n`,
  );
  const audit = new AuditTape(join(root, `audit-${round}.jsonl`), { runId: `bench-${round}` });
  const model = await createModel(`scripted:${script}`, audit);
  try {
    const limits = {
      ...DEFAULT_LIMITS,
      stepsPerPass: stepCount + 1,
      toolCallsPerPass: Math.max(DEFAULT_LIMITS.toolCallsPerPass, stepCount + 1),
      // Every request carries the outputs so far: 40 calls of 7 KB pass the default's 2 M tokens.
      tokens: 50_000_000,
    };
    const start = performance.now();
    const result = await runPass({
      model,
      tools: workTools,
      toolContext: { sandbox, bashTimeoutMs: 60_000, maxOutputChars: 20_000 },
      limits,
      budget: new RunBudget(limits),
      request: { role: "work", kind: "work", rank: 1, system: "bench", meta: { runId: `bench-${round}` } },
      brief: "bench",
      textReply: "nudge",
      blockerNudge: () => "",
      ...(observer ? { onEvent: observer(audit) } : {}),
    });
    const elapsed = performance.now() - start;
    if (result.exit.type !== "done" || result.toolCalls !== stepCount + 1) {
      throw new Error(
        `bench pass ended unexpectedly: ${JSON.stringify(result.exit)} after ${result.toolCalls} calls`,
      );
    }
    // The closing report_done step is model overhead too, so it is counted in the loop's time.
    return elapsed / stepCount;
  } finally {
    await model.close();
    audit.close();
  }
}
