// The context budget of a pass: the history is compacted at a few points so no request passes the
// model's window, elided outputs name their tape record and come back through `recall`, and a
// provider's refusal for length is followed by one compacted retry. The model is the scripted one,
// over real HTTP in both wire formats, with a `context_window`.
import { afterEach, describe, expect, it } from "vitest";
import { promptTokens } from "../../../runner/audit/prefix-cache.ts";
import { findToolOutput } from "../../../runner/audit/tool-output.ts";
import type { CallRecord } from "../../../runner/audit/types.ts";
import { readTape } from "../../../runner/audit/verify.ts";
import { DEFAULT_REPLY_TOKENS } from "../../../runner/llm/context-window.ts";
import { createModel } from "../../../runner/llm/create-model.ts";
import { Gateway } from "../../../runner/llm/gateway.ts";
import type { Message } from "../../../runner/llm/types.ts";
import {
  ContextKeeper,
  estimateTokens,
  HIGH_WATER,
  KEEP_CHARS,
} from "../../../runner/run/session/context-budget.ts";
import { type PassEvent, runPass } from "../../../runner/run/session/conversation.ts";
import { DEFAULT_LIMITS, RunBudget } from "../../../runner/run/session/limits.ts";
import { calls, freshRun, writeScript } from "../../llm/helpers.ts";
import { defineToolSet } from "./context-budget-tools.ts";

let model: Gateway | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

const WINDOW = 20_000;
const OUTPUT_CHARS = 3_000; // about 750 tokens a call as the scripted model counts, 1,000 as the runner estimates

/** A work script: `steps` emit calls of OUTPUT_CHARS each, recall of the first one, then report_done. */
function script(steps: number, window = WINDOW): string {
  const replies = Array.from(
    { length: steps },
    (_, i) => `  - tool_calls: [{ name: emit, input: { chars: ${OUTPUT_CHARS}, tag: "out-${i}" } }]`,
  );
  return writeScript(
    [
      `context_window: ${window}`,
      "work:",
      ...replies,
      "  - tool_calls: [{ name: report_done, input: { claim: done, summary: emitted } }]",
    ].join("\n"),
  );
}

/** A work pass with the emit tool over `gateway`; its events collected. */
async function passOver(gateway: Gateway, overrides: Partial<Parameters<typeof runPass>[0]> = {}) {
  const events: PassEvent[] = [];
  const result = await runPass({
    model: gateway,
    tools: defineToolSet(),
    toolContext: { sandbox: undefined as never, bashTimeoutMs: 1000, maxOutputChars: 50_000 },
    limits: { ...DEFAULT_LIMITS, stepsPerPass: 200, toolCallsPerPass: 400, maxRepeats: 200 },
    budget: new RunBudget({ ...DEFAULT_LIMITS }),
    request: {
      role: "work",
      kind: "work",
      rank: 1,
      system: "You are the work agent.",
      meta: { runId: "test-run" },
    },
    brief: "Emit the outputs, then report done.",
    textReply: "nudge",
    blockerNudge: () => "report a blocker",
    onEvent: (e) => events.push(e),
    ...overrides,
  });
  return { result, events };
}

async function pass(scheme: string, file: string) {
  const run = freshRun();
  model = await createModel(`${scheme}:${file}`, run.tape);
  return { ...(await passOver(model)), tapePath: run.tapePath };
}

function sentTokens(call: CallRecord, format: "anthropic" | "openai"): number {
  return promptTokens(format, call.wire) + DEFAULT_REPLY_TOKENS;
}

describe.each([
  ["scripted", "anthropic"],
  ["scripted-openai", "openai"],
] as const)("a long pass under a small window (%s)", (scheme, format) => {
  it("passes with outputs of four times the window and no request past it", async () => {
    const steps = Math.ceil((4 * WINDOW * 4) / OUTPUT_CHARS); // outputs of 4x the window, in characters/4
    const { result, events, tapePath } = await pass(scheme, script(steps));
    expect(result.exit.type).toBe("done");
    const tape = calls(tapePath);
    expect(tape).toHaveLength(steps + 1);
    expect(tape.every((c) => c.error === undefined)).toBe(true);
    for (const call of tape) expect(sentTokens(call, format)).toBeLessThanOrEqual(WINDOW);
    // Each request records the budget it was kept under (a replay compacts at the same points).
    expect(new Set(tape.map((c) => c.request.contextBudget))).toEqual(
      new Set([WINDOW - DEFAULT_REPLY_TOKENS]),
    );
    // A few compaction points, not one per call: between them the prompt's prefix stays the same.
    const compactions = events.filter((e) => e.type === "context");
    expect(compactions.length).toBeGreaterThanOrEqual(2);
    expect(compactions.length).toBeLessThan(steps / 3);
    expect(compactions.every((e) => e.type === "context" && e.action === "compacted")).toBe(true);
    // Between two compactions every request extends the one before (the cache prefix is valid).
    let extended = 0;
    for (let i = 1; i < tape.length; i++) {
      const before = JSON.stringify((tape[i - 1] as CallRecord).request.messages);
      const now = JSON.stringify((tape[i] as CallRecord).request.messages);
      if (now.startsWith(before.slice(0, -1))) extended++;
    }
    expect(extended).toBe(tape.length - 1 - compactions.length);
  });
});

describe("elided outputs", () => {
  it("name their call id, which finds their tape record, and recall returns the full text", async () => {
    const file = writeScript(
      [
        `context_window: ${WINDOW}`,
        "work:",
        ...Array.from(
          { length: 24 },
          (_, i) => `  - tool_calls: [{ name: emit, input: { chars: ${OUTPUT_CHARS}, tag: "out-${i}" } }]`,
        ),
        "  - tool_calls: [{ name: recall, input: { id: toolu_scripted_1_0 } }]",
        "  - tool_calls: [{ name: recall, input: { id: no-such-id } }]",
        "  - tool_calls: [{ name: report_done, input: { claim: done, summary: emitted } }]",
      ].join("\n"),
    );
    const { result, tapePath } = await pass("scripted", file);
    expect(result.exit.type).toBe("done");
    const results = result.messages.flatMap((m) => m.content).filter((b) => b.type === "tool_result");
    // The oldest kept output (on a night this long the first steps may have gone whole: the
    // estimate counts each step's ids and wire keys).
    const first = results[0];
    expect(first?.type === "tool_result" && first.content).toMatch(
      /^\[scifi elided this tool output \(3000 characters\) to keep the request inside the model's context window\. The full text is on the audit tape in the request that first sent it \(scifi audit show RUN --call "toolu_scripted_\d+_0"\); call recall with \{"id": "toolu_scripted_\d+_0"\} to read it again\.\]$/,
    );
    const content = first?.type === "tool_result" ? first.content : "";
    const id = /"(toolu_scripted_(\d+)_0)"/.exec(content);
    const step = Number(id?.[2]);
    // The id finds the call that first sent the full output (audit show --call), by no record number.
    const found = findToolOutput(readTape(tapePath), id?.[1] ?? "");
    expect(found).toMatchObject({ where: "request", role: "work" });
    expect(found?.text).toMatch(new RegExp(`^out-${step - 1}: `));
    const firstSent = calls(tapePath).find((c) =>
      JSON.stringify(c.request.messages).includes(`out-${step - 1}:`),
    );
    expect(found?.seq).toBe(firstSent?.seq);
    const recalled = results.at(-3);
    expect(recalled?.type === "tool_result" && recalled.content.startsWith("out-0:")).toBe(true);
    expect(recalled?.type === "tool_result" && recalled.content.length).toBe(OUTPUT_CHARS);
    const unknown = results.at(-2);
    expect(unknown?.type === "tool_result" && unknown.isError).toBe(true);
    expect(unknown?.type === "tool_result" && unknown.content).toMatch(
      /No shortened tool output has the id "no-such-id"/,
    );
  });

  it("a pass whose model has no window is not compacted and gets no recall tool", async () => {
    const file = writeScript(
      `work:\n  - tool_calls: [{ name: emit, input: { chars: 100000, tag: big } }]\n  - tool_calls: [{ name: report_done, input: { claim: done, summary: s } }]\n`,
    );
    const { result, events, tapePath } = await pass("scripted", file);
    expect(result.exit.type).toBe("done");
    expect(events.some((e) => e.type === "context")).toBe(false);
    expect(calls(tapePath)[0]?.request.tools?.map((t) => t.name)).not.toContain("recall");
    expect(calls(tapePath)[0]?.request.contextBudget).toBeUndefined();
  });
});

describe("a provider that refuses a request as too long", () => {
  it.each(["anthropic", "openai"] as const)(
    "is answered by one compacted retry (%s), recorded on the tape and as a pass event",
    async (format) => {
      // The gateway believes the window is 60,000 tokens; the server's is 20,000: only the provider can say.
      const run = freshRun();
      const { ScriptedServer } = await import("../../../runner/llm/scripted/server.ts");
      const file = script(30);
      const server = await ScriptedServer.start(file);
      const { AnthropicProvider } = await import("../../../runner/llm/providers/anthropic.ts");
      const { OpenAIProvider } = await import("../../../runner/llm/providers/openai.ts");
      const provider =
        format === "anthropic"
          ? new AnthropicProvider({
              name: "scripted",
              model: "scripted-big",
              apiKey: "k",
              baseURL: server.baseURL,
            })
          : new OpenAIProvider({
              name: "scripted",
              model: "scripted-big",
              apiKey: "k",
              baseURL: `${server.baseURL}/v1`,
            });
      model = new Gateway(
        [
          {
            name: "scripted-big",
            provider,
            rank: "any",
            kinds: ["work", "control"],
            prices: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
            contextBudget: () => 60_000,
          },
        ],
        { audit: run.tape, retry: { maxRetries: 0 }, onClose: () => server.close() },
      );
      const { result, events } = await passOver(model);
      expect(result.exit.type).toBe("done");
      expect(server.refusedForLength).toBeGreaterThanOrEqual(1);
      const retried = events.filter((e) => e.type === "context" && e.action === "retried");
      expect(retried).toHaveLength(server.refusedForLength);
      const tape = calls(run.tapePath);
      const refused = tape.filter((c) => c.error);
      expect(refused.map((c) => c.error?.name)).toEqual(retried.map(() => "ContextTooLong"));
      // Each refused call is followed by the same step sent again, compacted, and answered.
      for (const call of refused) {
        const next = tape.find((c) => c.seq > call.seq);
        expect(next?.error).toBeUndefined();
        expect(next?.step).toBe(call.step);
      }
    },
  );

  it("a second refusal right after the retry ends the pass as a refused request", async () => {
    // A budget smaller than the system prompt and brief: nothing can be elided enough. (The window
    // leaves the default reservation in place: at least a quarter of it is left for the prompt.)
    const run = freshRun();
    model = await createModel(`scripted:${script(2, 8192 + 2800)}`, run.tape);
    await expect(
      passOver(model, { limits: { ...DEFAULT_LIMITS }, brief: "x".repeat(12_000) }),
    ).rejects.toMatchObject({ name: "ContextTooLong" });
  });
});

describe("ContextKeeper", () => {
  const fixed = { system: "s", tools: [], workspaceContext: "w" };
  const result = (id: string, chars: number): Message => ({
    role: "user",
    content: [{ type: "tool_result", toolUseId: id, content: "y".repeat(chars) }],
  });
  const call = (id: string): Message => ({
    role: "assistant",
    content: [{ type: "tool_use", id, name: "emit", input: { chars: 1 } }],
  });

  it("leaves a history under the high-water mark alone, and never elides the brief or the newest output", () => {
    const keeper = new ContextKeeper(10_000);
    const history: Message[] = [
      result("brief", 6900),
      call("a"),
      result("a", 6900),
      call("b"),
      result("b", 6900),
    ];
    expect(keeper.estimate(fixed, history)).toBeLessThan(HIGH_WATER * 10_000);
    expect(keeper.fit(fixed, history)).toBeUndefined();
    const big = [...history, call("c"), result("c", 6900)];
    const fitted = keeper.fit(fixed, big);
    expect(fitted).toBeDefined();
    expect(fitted?.messages[0]).toBe(big[0]);
    expect(fitted?.messages.at(-1)).toBe(big.at(-1));
    expect(fitted?.after).toBeLessThanOrEqual(0.5 * 10_000);
    expect(keeper.recall("a")).toBe("y".repeat(6900));
    // The same history compacts the same way: what a replay relies on.
    expect(new ContextKeeper(10_000).fit(fixed, big)?.messages).toEqual(fitted?.messages);
  });

  it("keeps short outputs; with no room left it removes the oldest steps whole, never the newest", () => {
    const keeper = new ContextKeeper(100);
    const history = [result("brief", 10), call("a"), result("a", KEEP_CHARS), call("b"), result("b", 10)];
    const fitted = keeper.fit(fixed, history);
    expect(fitted).toBeDefined();
    // No placeholder for a short output: the step went whole, with a note in the brief.
    expect(fitted?.messages.map((m) => m.content.map((b) => b.type))).toEqual([
      ["tool_result", "text"],
      ["tool_use"],
      ["tool_result"],
    ]);
    const note = fitted?.messages[0]?.content[1];
    expect(note?.type === "text" && note.text).toMatch(/^\[scifi removed the 1 oldest steps of this pass/);
    expect(fitted?.messages.at(-1)).toBe(history.at(-1));
    expect(keeper.recall("a")).toBe("y".repeat(KEEP_CHARS));
  });

  it("counts from above: multi-byte text by its bytes, control characters as JSON escapes them", () => {
    expect(estimateTokens("é".repeat(300))).toBe(Math.ceil((600 + 2) / 3));
    expect(estimateTokens("\0".repeat(300))).toBe(Math.ceil((6 * 300 + 2) / 3));
    expect(estimateTokens("plain")).toBe(Math.ceil((5 + 2) / 3));
  });
});
