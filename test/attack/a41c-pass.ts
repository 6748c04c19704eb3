// Helpers of attacker a41c (issue 41's context budget): one work pass with the emit tool over a
// scripted model (labelled scripted; real HTTP, both wire formats) with a `context_window`, its
// events, its error if it threw, and the calls on its tape.

import { z } from "zod";
import { promptTokens } from "../../runner/audit/prefix-cache.ts";
import type { CallRecord } from "../../runner/audit/types.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { type PassEvent, type PassResult, runPass } from "../../runner/run/session/conversation.ts";
import { DEFAULT_LIMITS, RunBudget } from "../../runner/run/session/limits.ts";
import type { ToolSet } from "../../runner/tools/registry.ts";
import { defineTool } from "../../runner/tools/tool.ts";
import { calls, freshRun, writeScript } from "../llm/helpers.ts";
import { defineToolSet } from "../run/session/context-budget-tools.ts";

/** A tool whose output is any text repeated (multi-byte, control characters): no sandbox needed. */
export const blobTool = defineTool({
  name: "blob",
  effect: "exec",
  description: new URL("./a41c-blob.md", import.meta.url),
  input: z.strictObject({ unit: z.string(), times: z.number().int().min(0), tag: z.string() }),
  async execute({ unit, times, tag }) {
    return { ok: true, output: `${tag}: ${unit.repeat(times)}` };
  },
});

function tools(): ToolSet {
  return new Map([...defineToolSet(), [blobTool.name, blobTool]]);
}

export interface PassRun {
  result: PassResult | undefined;
  error: Error | undefined;
  events: PassEvent[];
  tape: CallRecord[];
  tapePath: string;
  dir: string;
  model: Gateway;
}

/** Closes every model a test opened (call from afterEach). */
export const opened: Gateway[] = [];
export async function closeAll(): Promise<void> {
  for (const model of opened.splice(0)) await model.close();
}

/** A work pass of the script `lines` (scheme `scripted` or `scripted-openai`). */
export async function scriptedPass(
  scheme: "scripted" | "scripted-openai" | string,
  lines: string[],
  options: { brief?: string; runDir?: ReturnType<typeof freshRun>; scriptName?: string } = {},
): Promise<PassRun> {
  const run = options.runDir ?? freshRun("a41c");
  const model = (await createModel(
    `${scheme}:${writeScript(lines.join("\n"), options.scriptName)}`,
    run.tape,
  )) as Gateway;
  opened.push(model);
  return passOn(model, run, options.brief);
}

/** The same pass over a model already made (a replay, a hand-made gateway). */
export async function passOn(
  model: Gateway,
  run: ReturnType<typeof freshRun>,
  brief = "Emit the outputs, then report done.",
): Promise<PassRun> {
  const events: PassEvent[] = [];
  let error: Error | undefined;
  const result = await runPass({
    model,
    tools: tools(),
    toolContext: { sandbox: undefined as never, bashTimeoutMs: 1000, maxOutputChars: 50_000 },
    limits: { ...DEFAULT_LIMITS, stepsPerPass: 2000, toolCallsPerPass: 4000, maxRepeats: 4000 },
    budget: new RunBudget({ ...DEFAULT_LIMITS, tokens: 1e12, usd: 1e6 }),
    request: {
      role: "work",
      kind: "work",
      rank: 1,
      system: "You are the work agent.",
      meta: { runId: "a41c" },
    },
    brief,
    textReply: "nudge",
    blockerNudge: () => "report a blocker",
    onEvent: (e) => events.push(e),
  }).catch((e: unknown) => {
    error = e as Error;
    return undefined;
  });
  return { result, error, events, tape: calls(run.tapePath), tapePath: run.tapePath, dir: run.dir, model };
}

/** The prompt's tokens as the scripted model counts them (its window refuses past them). */
export function sent(call: CallRecord, format: "anthropic" | "openai"): number {
  return promptTokens(format, call.wire);
}

/** `n` script lines of emit calls of `chars` characters. */
export function emits(n: number, chars: number, tag = (i: number) => `out-${i}`): string[] {
  return Array.from(
    { length: n },
    (_, i) => `  - tool_calls: [{ name: emit, input: { chars: ${chars}, tag: "${tag(i)}" } }]`,
  );
}

export const DONE = "  - tool_calls: [{ name: report_done, input: { claim: done, summary: s } }]";
