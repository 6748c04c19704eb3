// Synthetic run folders in exactly the shapes a real scripted run writes (state.json, history.jsonl,
// a hash-chained audit tape through AuditTape, sam.json's metadata), for volume: the evolve tests
// and the evolve benchmark. test/evolve/shapes.e2e.test.ts holds one real scripted run against
// these and fails when a field the real run writes is missing here, or one is added that it lacks.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AuditTape } from "../../runner/audit/tape.ts";
import type { TapeContentBlock, TapeRequest } from "../../runner/audit/types.ts";
import type { HistoryEvent } from "../../runner/memory/history-events.ts";
import { runFiles } from "../../runner/paths.ts";
import type { RunState } from "../../runner/run-folder/state.ts";

export interface SynthRun {
  runId: string;
  task: string;
  group?: string;
  /** The models-config entry of every call (scripted: provider `scripted`). */
  entry: string;
  rank: number;
  /** Each iteration's verdict: pass or fail. The run passes when the last one passes. */
  iterations: boolean[];
  /** Tool results per work pass: how many failed, and of those how many the allowlist refused. */
  toolFailures?: number;
  allowlistRefusals?: number;
  /** Output tail of check-1 when it fails. */
  failOutput?: string;
  /** The review's finding on a failed iteration. */
  finding?: string;
  /** USD per call (scripted: 0). */
  usdPerCall?: number;
  /** Checks pass but the review fails the node (a disagreement the statistics count). */
  reviewFailsPassingChecks?: boolean;
  startedAt?: string;
  provider?: string;
  /** Put before each role's system prompt (the benchmark: the real prompts' size). */
  systemPrefix?: string;
  /** Integrity events (docs/integrity.md) the run's history holds, each an `asset_write`. */
  integrityEvents?: number;
}

type Message = TapeRequest["messages"][number];

const TOOLS: NonNullable<TapeRequest["tools"]> = [
  { name: "bash", description: "Run a shell command in /task.", inputSchema: { type: "object" } },
  { name: "done", description: "Report the work done.", inputSchema: { type: "object" } },
];

const SYSTEM = {
  prescan: "You are the pre-scan agent.",
  work: "You are the work agent.",
  review: "You are the review agent.",
};

export function writeRun(runsDir: string, run: SynthRun): string {
  const dir = join(runsDir, run.runId);
  mkdirSync(dir, { recursive: true });
  const files = runFiles(dir);
  let clock = Date.parse(run.startedAt ?? "2026-11-30T01:00:00.000Z");
  const now = () => new Date(clock);
  const tape = new AuditTape(files.audit, { runId: run.runId, now, key: null });
  const history: string[] = [];
  let seq = 0;
  const event = (e: HistoryEvent) => {
    clock += 5;
    history.push(JSON.stringify({ seq: ++seq, time: now().toISOString(), ...e }));
  };
  const provider = run.provider ?? "scripted";
  const call = (
    role: "prescan" | "work" | "review",
    iteration: number,
    messages: Message[],
    content: TapeContentBlock[],
    json?: unknown,
  ) => {
    clock += 300;
    tape.append({
      kind: "call",
      role,
      iteration,
      sam: { file: `/tasks/${run.task}/task.md`, sha256: "0".repeat(64) },
      provider,
      model: run.entry,
      entry: run.entry,
      request: {
        kind: role === "work" ? "work" : "control",
        rank: run.rank,
        system: `${run.systemPrefix ?? ""}${SYSTEM[role]}`,
        messages,
        // As the real agents send them: the pre-scan a schema, work and review tools and the
        // per-step workspace context.
        ...(role === "prescan"
          ? { jsonSchema: { name: "plan", schema: { type: "object" } } }
          : { tools: TOOLS, workspaceContext: "Step 1 of 40; tool calls left in this pass: 80." }),
      },
      response: {
        content,
        stopReason: content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
        ...(json !== undefined ? { json } : {}),
      },
      usage: { input: 50, output: 30, cacheWrite: 200, cacheRead: 600 * iteration, reasoning: 0 },
      costUsd: run.usdPerCall ?? 0,
      latencyMs: 300,
      attempts: [],
    });
  };
  const passed = run.iterations[run.iterations.length - 1] === true;
  event({ type: "run_start", sam: `/tasks/${run.task}/task.md`, sha256: "0".repeat(64), backend: "docker" });
  let toolId = 0;
  for (const [index, ok] of run.iterations.entries()) {
    const iteration = index + 1;
    event({ type: "iteration_start", iteration });
    const brief: Message = {
      role: "user",
      content: [{ type: "text", text: `# Task ${run.task} (node root)` }],
    };
    call("prescan", iteration, [brief], [{ type: "text", text: "{}" }], { order: ["root"], rank: run.rank });
    event({
      type: "prescan",
      iteration,
      node: "root",
      rank: run.rank,
      skills: [],
      direction: "build and test",
    });
    // Three steps of tool calls; the results come back in the next work call's last message.
    const messages: Message[] = [brief];
    const failures = run.toolFailures ?? 0;
    const refusals = run.allowlistRefusals ?? 0;
    for (let step = 0; step < 3; step++) {
      const id = `toolu_scripted_${++toolId}_0`;
      const use: TapeContentBlock = {
        type: "tool_use",
        id,
        name: "bash",
        input: { command: `make step${step}` },
      };
      call("work", iteration, [...messages], [{ type: "text", text: `Step ${step}.` }, use]);
      messages.push({ role: "assistant", content: [{ type: "text", text: `Step ${step}.` }, use] });
      const failed = step < failures;
      const refused = step < refusals;
      messages.push({
        role: "user",
        content: [
          {
            type: "tool_result",
            toolUseId: id,
            content: refused
              ? "Refused: not on this task's command allowlist: curl"
              : failed
                ? "exit code: 2\nstderr:\nmake: *** [all] Error 2"
                : "exit code: 0",
            isError: failed || refused,
          },
        ],
      });
    }
    call(
      "work",
      iteration,
      [...messages],
      [{ type: "tool_use", id: `toolu_scripted_${++toolId}_0`, name: "done", input: { claim: "done" } }],
    );
    event({ type: "work_end", iteration, node: "root", exit: "done", steps: 4, toolCalls: 4 });
    const checkPassed = ok || run.reviewFailsPassingChecks === true;
    event({
      type: "check",
      iteration,
      node: "root",
      check: "root/check-1",
      passed: checkPassed,
      exitCode: checkPassed ? 0 : 1,
      output: checkPassed ? "PASS\n" : (run.failOutput ?? "FAIL: wrong value\n"),
      // The sandbox a check ran in, as the runner records it (its own per stage).
      sandbox: `scifi-synthetic-${iteration}-checks0`,
    });
    const finding = ok ? [] : [run.finding ?? `iteration ${iteration} left the counter wrong`];
    call(
      "review",
      iteration,
      [{ role: "user", content: [{ type: "text", text: `# Node root: ${run.task}` }] }],
      [{ type: "text", text: JSON.stringify({ items: [{ id: "root/e1", pass: ok }], findings: finding }) }],
    );
    event({
      type: "verdict",
      iteration,
      node: "root",
      passed: ok,
      items: [{ id: "root/e1", pass: ok, evidence: ok ? "check passed" : "check failed" }],
      checksPassed: checkPassed,
      findings: finding,
      fixes: ok ? [] : ["fix the counter"],
      rankAdjustment: 0,
    });
    if (ok) event({ type: "node_complete", iteration, node: "root" });
    const audit = tape.head();
    event({
      type: "iteration_end",
      iteration,
      passed: ok,
      ...(ok ? {} : { reason: "failed checks: root/check-1" }),
      ...(audit ? { audit } : {}),
    });
  }
  for (let i = 0; i < (run.integrityEvents ?? 0); i++)
    event({
      type: "integrity",
      iteration: 1,
      kind: "asset_write",
      role: "work",
      attempted: "bash wrote checks/check.py",
      rule: "SAM files and check assets are read-only to agents",
      action: "refused",
    });
  event({ type: "final_review", groupSuggestions: 0, globalSuggestions: 0 });
  const outcome = passed
    ? { status: "passed" as const, reason: "every check and review item passed" }
    : { status: "failed" as const, reason: `iteration limit reached (${run.iterations.length})` };
  const head = tape.head();
  event({
    type: "run_end",
    outcome: outcome.status,
    reason: outcome.reason,
    ...(head ? { audit: head } : {}),
  });
  tape.close();
  writeFileSync(files.history, `${history.join("\n")}\n`);
  const state: RunState = {
    version: 1,
    runId: run.runId,
    samFile: `/tasks/${run.task}/task.md`,
    samSha256: "0".repeat(64),
    samFiles: [{ file: `/tasks/${run.task}/task.md`, sha256: "0".repeat(64) }],
    pristine: { files: [], folders: [] },
    taskFolderBaseBytes: 4096,
    backend: "docker",
    model: `scripted:/scripts/${run.entry}.yaml`,
    phase: "ended",
    iteration: run.iterations.length,
    attempts: { root: run.iterations.filter((x) => !x).length },
    completeNodes: passed ? ["root"] : [],
    workRank: run.rank,
    spent: { tokens: 1000, usd: 0, elapsedMs: run.iterations.length * 5000, at: now().toISOString() },
    limits: {
      stepsPerPass: 40,
      toolCallsPerPass: 80,
      toolCallsPerStep: 8,
      maxRepeats: 3,
      maxRepeatsRead: 6,
      failingStepsBeforeBlocker: 4,
      iterations: 5,
      walltimeSec: 3600,
      tokens: 2_000_000,
      usd: 5,
      bashTimeoutSec: 600,
      toolOutputChars: 20_000,
    },
    historyBytes: 0,
    resumes: 0,
    outcome,
  };
  writeFileSync(files.state, `${JSON.stringify(state, null, 2)}\n`);
  writeFileSync(
    files.samJson,
    `${JSON.stringify({ file: state.samFile, sha256: state.samSha256, metadata: { name: run.task, ...(run.group ? { group: run.group } : {}), subtasks: [] } })}\n`,
  );
  return dir;
}

/** Runs of one model: `passing` runs pass at once, `late` pass on the second try, `failing` fail all three. */
export function modelRuns(
  entry: string,
  rank: number,
  counts: { passing: number; late: number; failing: number },
  extra: Partial<SynthRun> = {},
): SynthRun[] {
  const shapes = [
    ...Array.from({ length: counts.passing }, () => [true]),
    ...Array.from({ length: counts.late }, () => [false, true]),
    ...Array.from({ length: counts.failing }, () => [false, false, false]),
  ];
  return shapes.map((iterations, i) => ({
    runId: `20261130-0100${String(i).padStart(2, "0")}-${entry}-${String(i).padStart(4, "0")}`,
    task: "counter",
    group: "rtl",
    entry,
    rank,
    iterations,
    ...extra,
  }));
}
