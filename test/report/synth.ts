// A synthetic run folder for report unit tests and the report benchmark: a real hash-chained audit
// tape written through AuditTape (so `verifyTape` passes), a history tape and a granted spec.
// The conversations grow like the loop's do (each work call resends the pass so far).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AuditTape } from "../../runner/audit/tape.ts";
import type { TapeContentBlock, TapeRequest, TapeUsage } from "../../runner/audit/types.ts";
import type { HistoryEvent } from "../../runner/memory/history-events.ts";
import { runFiles } from "../../runner/paths.ts";
import type { SandboxSpec } from "../../runner/policy/spec.ts";

export interface SynthOptions {
  /** Calls in all (prescan + work + 2 review per iteration, one final review). */
  calls: number;
  workCallsPerIteration?: number;
  /** Text put into one tool output (for the escaping tests). */
  hostileOutput?: string;
}

type Message = TapeRequest["messages"][number];

export function synthRun(runsDir: string, runId: string, options: SynthOptions): string {
  const dir = join(runsDir, runId);
  mkdirSync(dir, { recursive: true });
  const files = runFiles(dir);
  let clock = Date.parse("2026-11-30T01:00:00.000Z");
  const tick = (ms: number): Date => {
    clock += ms;
    return new Date(clock);
  };
  const tape = new AuditTape(files.audit, { runId, now: () => new Date(clock) });
  const history: string[] = [];
  let seq = 0;
  const event = (e: HistoryEvent): void => {
    history.push(JSON.stringify({ seq: ++seq, time: new Date(clock).toISOString(), ...e }));
  };
  const work = options.workCallsPerIteration ?? 37;
  const perIteration = work + 3;
  const iterations = Math.max(1, Math.floor((options.calls - 1) / perIteration));
  let written = 0;
  let toolId = 0;
  const call = (
    role: string,
    iteration: number | undefined,
    messages: Message[],
    content: TapeContentBlock[],
    json?: unknown,
  ) => {
    tick(400 + (written % 7) * 50);
    const usage = usageFor(messages.length, written);
    tape.append({
      kind: "call",
      role,
      ...(iteration !== undefined ? { iteration } : {}),
      provider: "anthropic",
      model: "claude-synthetic",
      entry: "synthetic",
      request: {
        kind: role === "work" ? "work" : "control",
        rank: 1,
        system: `You are the ${role} agent.`,
        messages,
      },
      response: {
        content,
        stopReason: content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
        ...(json !== undefined ? { json } : {}),
      },
      usage,
      costUsd: (usage.input * 3 + usage.cacheWrite * 3.75 + usage.cacheRead * 0.3 + usage.output * 15) / 1e6,
      latencyMs: 400,
      attempts: [],
    });
    written++;
  };
  event({ type: "run_start", sam: "/synthetic/task.md", sha256: "0".repeat(64), backend: "docker" });
  for (let it = 1; it <= iterations; it++) {
    event({ type: "iteration_start", iteration: it });
    call(
      "prescan",
      it,
      [user(`Plan iteration ${it}.`)],
      [{ type: "text", text: `{"node":"root","plan":"step ${it}"}` }],
      { node: "root" },
    );
    event({
      type: "prescan",
      iteration: it,
      node: "root",
      rank: 1,
      skills: [],
      direction: `direction ${it}`,
    });
    const messages: Message[] = [user(`Work on iteration ${it}.`)];
    for (let step = 1; step <= work; step++) {
      const id = `toolu_${++toolId}`;
      const command = `python3 analyse.py --part ${step}`;
      const content: TapeContentBlock[] = [
        { type: "thinking", thinking: `Step ${step}: run part ${step} and look at the residuals.` },
        { type: "tool_use", id, name: step % 5 === 0 ? "read_file" : "bash", input: { command } },
      ];
      call("work", it, [...messages], content);
      messages.push({ role: "assistant", content });
      const hostile = it === 1 && step === 2 && options.hostileOutput;
      const output = hostile || toolOutput(it, step);
      messages.push({
        role: "user",
        content: [
          {
            type: "tool_result",
            toolUseId: id,
            content: output,
            ...(step % 11 === 0 ? { isError: true } : {}),
          },
        ],
      });
    }
    event({ type: "work_end", iteration: it, node: "root", exit: "done", steps: work, toolCalls: work });
    tick(1500);
    event({
      type: "check",
      iteration: it,
      node: "root",
      check: "root/check-1",
      passed: it === iterations,
      exitCode: it === iterations ? 0 : 1,
    });
    call(
      "review",
      it,
      [user("Review.")],
      [
        {
          type: "tool_use",
          id: `toolu_${++toolId}`,
          name: "bash",
          input: { command: "cat results/fit.txt" },
        },
      ],
    );
    const pass = it === iterations;
    const verdict = {
      items: [{ id: "root/e1", pass, evidence: `fit.txt chi2/ndf = ${pass ? "1.02" : "7.9"}` }],
      findings: [],
      fixes: pass ? [] : ["refit with the background term"],
      rank_adjustment: 0,
    };
    call(
      "review",
      it,
      [
        user("Review."),
        {
          role: "user",
          content: [{ type: "tool_result", toolUseId: `toolu_${toolId}`, content: "chi2/ndf = 1.02" }],
        },
      ],
      // Like the loop's agents: the verdict is in the reply text, not a provider-parsed `json`.
      [{ type: "text", text: JSON.stringify(verdict) }],
    );
    event({
      type: "verdict",
      iteration: it,
      node: "root",
      passed: pass,
      items: verdict.items,
      checksPassed: pass,
      findings: verdict.findings,
      fixes: verdict.fixes,
      rankAdjustment: verdict.rank_adjustment,
    });
    event({ type: "iteration_end", iteration: it, passed: pass });
  }
  while (written < options.calls)
    call("final_review", 1, [user("Final review.")], [{ type: "text", text: "{}" }], {});
  event({ type: "final_review", groupSuggestions: 0, globalSuggestions: 0 });
  event({ type: "run_end", outcome: "passed", reason: "every check and review item passed" });
  tape.close();
  writeFileSync(files.history, `${history.join("\n")}\n`);
  writeFileSync(files.spec, `${JSON.stringify(spec(runId), null, 2)}\n`);
  return dir;
}

function user(text: string): Message {
  return { role: "user", content: [{ type: "text", text }] };
}

function usageFor(messages: number, index: number): TapeUsage {
  const prompt = 1200 + messages * 180;
  const cached = index % 40 === 0 ? 0 : Math.floor(prompt * 0.8);
  return {
    input: 40,
    cacheWrite: prompt - cached,
    cacheRead: cached,
    output: 60 + (index % 13) * 5,
    reasoning: 0,
  };
}

function toolOutput(iteration: number, step: number): string {
  const lines = step % 9 === 0 ? 120 : 6;
  return Array.from(
    { length: lines },
    (_, i) => `it ${iteration} part ${step} line ${i}: residual ${(Math.sin(i + step) * 0.1).toFixed(4)}`,
  ).join("\n");
}

function spec(runId: string): SandboxSpec {
  return {
    runId,
    image: "scifi-sci:local",
    user: { uid: 1000, gid: 1000 },
    taskDir: "/synthetic/task",
    workdir: "/task",
    mounts: [{ source: "/synthetic/task", target: "/task", readOnly: false, reason: "task folder" }],
    network: false,
    gpus: 0,
    cpus: 2,
    memoryBytes: 4 * 2 ** 30,
    pidsLimit: 512,
    walltimeSec: 3600,
    env: {},
    labels: {},
  };
}
