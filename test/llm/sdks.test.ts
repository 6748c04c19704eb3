// Both real SDKs (Anthropic Messages, OpenAI Chat Completions) against the scripted server over
// HTTP, through the gateway: tool calls, multi-turn history, thinking, structured JSON, usage.
import { afterEach, describe, expect, it } from "vitest";
import { verifyTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import type { ContentBlock, Message } from "../../runner/llm/types.ts";
import { calls, fixture, freshRun, request, shellTool, userText, writeScript } from "./helpers.ts";

const verdictSchema = {
  name: "verdict",
  schema: {
    type: "object",
    properties: {
      verdict: { type: "string", enum: ["pass", "fail"] },
      fixes: { type: "array", items: { type: "string" } },
    },
    required: ["verdict", "fixes"],
  },
};

let model: Gateway | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

function toolUse(content: ContentBlock[]) {
  const block = content.find((b) => b.type === "tool_use");
  if (block?.type !== "tool_use") throw new Error("expected a tool call");
  return block;
}

describe.each(["scripted", "scripted-openai"])("%s wire format through the real SDK", (scheme) => {
  it("runs a multi-turn tool session, a structured review, and records every call", async () => {
    const run = freshRun();
    model = await createModel(`${scheme}:${fixture("sdk.yaml")}`, run.tape);
    const history: Message[] = [userText("Which columns does data/run1.csv have?")];
    const base = { tools: [shellTool] };

    const first = await model.complete(
      request({ ...base, messages: history, workspaceContext: "step 1 of 20" }),
    );
    expect(first.provider).toBe("scripted");
    expect(first.model).toBe("scripted-sdk");
    expect(first.costUsd).toBe(0);
    expect(first.stopReason).toBe("tool_use");
    expect(toolUse(first.content)).toMatchObject({ name: "shell", input: { command: "ls data" } });
    expect(first.content[0]).toMatchObject({
      type: "thinking",
      thinking: "Start by listing the data folder.",
    });

    history.push({ role: "assistant", content: first.content });
    history.push({
      role: "user",
      content: [{ type: "tool_result", toolUseId: toolUse(first.content).id, content: "run1.csv\nrun2.csv" }],
    });
    const second = await model.complete(
      request({ ...base, messages: history, workspaceContext: "step 2 of 20" }),
    );
    expect(toolUse(second.content).input).toEqual({ command: "head data/run1.csv" });

    history.push({ role: "assistant", content: second.content });
    history.push({
      role: "user",
      content: [
        { type: "tool_result", toolUseId: toolUse(second.content).id, content: "energy, momentum\n1.0, 2.0" },
      ],
    });
    const third = await model.complete(
      request({ ...base, messages: history, workspaceContext: "step 3 of 20" }),
    );
    expect(third.stopReason).toBe("end_turn");
    expect(third.content).toEqual([{ type: "text", text: "The columns are energy and momentum. Done." }]);
    // The history grew and the earlier prefix is served from the (simulated) cache.
    expect(third.usage.cacheRead).toBeGreaterThan(second.usage.cacheRead);
    expect(third.usage.cacheRead).toBeGreaterThan(0);

    const review = await model.complete(
      request({
        role: "review",
        kind: "control",
        rank: 3,
        messages: [userText("Expectation: columns reported")],
        jsonSchema: verdictSchema,
      }),
    );
    expect(review.json).toEqual({ verdict: "pass", fixes: [] });

    const recorded = calls(run.tapePath);
    expect(recorded.map((c) => c.role)).toEqual(["work", "work", "work", "review"]);
    expect(recorded[0]?.response?.content[0]).toMatchObject({ type: "thinking" });
    expect(recorded[3]?.response?.json).toEqual({ verdict: "pass", fixes: [] });
    expect(recorded[2]?.usage).toEqual(third.usage);
    expect(verifyTape(run.tapePath)).toEqual({ ok: true, records: 4 });
  });

  it("raises StructuredOutputError when the reply does not match the schema, and records it", async () => {
    const run = freshRun();
    const { writeScript } = await import("./helpers.ts");
    const file = writeScript(`review:\n  - json: { verdict: maybe }\n  - text: "not json at all"\n`);
    model = await createModel(`${scheme}:${file}`, run.tape);
    const ask = request({
      role: "review",
      kind: "control",
      messages: [userText("verdict?")],
      jsonSchema: verdictSchema,
    });
    await expect(model.complete(ask)).rejects.toMatchObject({ name: "StructuredOutputError" });
    await expect(model.complete(ask)).rejects.toThrow(/not valid JSON/);
    const recorded = calls(run.tapePath);
    expect(recorded.map((c) => c.error?.name)).toEqual(["StructuredOutputError", "StructuredOutputError"]);
    expect(recorded[1]?.response?.content).toEqual([{ type: "text", text: "not json at all" }]);
  });
});

describe("anthropic adapter specifics", () => {
  it("sends thinking blocks back unmodified; a modified one is rejected like the real API does", async () => {
    const run = freshRun();
    model = await createModel(`scripted:${fixture("sdk.yaml")}`, run.tape);
    const first = await model.complete(request({ tools: [shellTool], messages: [userText("go")] }));
    const tampered = first.content.map((b) =>
      b.type === "thinking" ? { ...b, thinking: `${b.thinking} (edited)` } : b,
    );
    const history: Message[] = [
      userText("go"),
      { role: "assistant", content: tampered },
      {
        role: "user",
        content: [{ type: "tool_result", toolUseId: toolUse(first.content).id, content: "run1.csv" }],
      },
    ];
    await expect(model.complete(request({ tools: [shellTool], messages: history }))).rejects.toThrow(
      /thinking block in the history was modified/,
    );
  });

  it("puts breakpoints on system, last tool and last history message, and the workspace context after them", async () => {
    const run = freshRun();
    model = await createModel(`scripted:${fixture("sdk.yaml")}`, run.tape);
    await model.complete(
      request({
        tools: [shellTool, { ...shellTool, name: "read" }],
        messages: [userText("go")],
        workspaceContext: "step 1",
      }),
    );
    const wire = calls(run.tapePath)[0]?.wire as {
      system: { cache_control?: unknown }[];
      tools: { cache_control?: unknown }[];
      messages: { content: { type: string; text?: string; cache_control?: unknown }[] }[];
      thinking?: unknown;
    };
    expect(wire.system[0]?.cache_control).toEqual({ type: "ephemeral" });
    expect(wire.tools.map((t) => t.cache_control)).toEqual([undefined, { type: "ephemeral" }]);
    const last = wire.messages[wire.messages.length - 1]?.content ?? [];
    expect(last).toEqual([
      { type: "text", text: "go", cache_control: { type: "ephemeral" } },
      { type: "text", text: "step 1" },
    ]);
    expect(wire.thinking).toEqual({ type: "adaptive", display: "summarized" });
  });
});

describe("prompt cache across a wide turn (anthropic)", () => {
  it("a turn that adds more than 20 blocks still reads the previous turn's history from the cache", async () => {
    const calls12 = Array.from(
      { length: 12 },
      (_, i) => `      - name: shell\n        input: { command: "cat part${i}.txt" }\n`,
    ).join("");
    const script = writeScript(
      `work:\n  - text: "Reading."\n    tool_calls:\n      - name: shell\n        input: { command: "ls" }\n  - text: "Reading all parts."\n    tool_calls:\n${calls12}  - text: "Done."\n`,
    );
    const run = freshRun();
    model = await createModel(`scripted:${script}`, run.tape);
    const history: Message[] = [userText(`Summarise the parts. ${"Background. ".repeat(400)}`)];
    const usages = [];
    for (let step = 0; step < 3; step++) {
      const reply = await model.complete(
        request({ tools: [shellTool], messages: history, workspaceContext: `step ${step + 1}` }),
      );
      usages.push(reply.usage);
      const uses = reply.content.flatMap((b) => (b.type === "tool_use" ? [b] : []));
      if (uses.length === 0) break;
      history.push({ role: "assistant", content: reply.content });
      history.push({
        role: "user",
        content: uses.map((u) => ({
          type: "tool_result" as const,
          toolUseId: u.id,
          content: `contents of ${u.id}`,
        })),
      });
    }
    const [, second, third] = usages;
    // The third request added 1 + 12 + 12 blocks; everything the second one cached is read back.
    expect(third?.cacheRead).toBe((second?.cacheRead ?? 0) + (second?.cacheWrite ?? 0));
    expect(third?.cacheRead).toBeGreaterThan(1200);
  });
});

describe("usage and cost", () => {
  const prices = { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 };

  it("anthropic: maps input / cache write / cache read / output and prices them", async () => {
    const { ScriptedServer } = await import("../../runner/llm/scripted/server.ts");
    const server = await ScriptedServer.start(fixture("priced.yaml"));
    try {
      const run = freshRun();
      model = await createModel(
        {
          models: [
            {
              name: "a",
              provider: "anthropic",
              model: "scripted-priced",
              baseURL: server.baseURL,
              rank: 1,
              prices,
              noApiKey: true,
            },
          ],
        },
        run.tape,
      );
      const r1 = await model.complete(request({ messages: [userText("hi")] }));
      expect(r1.usage).toEqual({
        input: 1000,
        output: 500,
        cacheWrite: 2000,
        cacheRead: 10000,
        reasoning: 0,
      });
      // (1000*3 + 500*15 + 2000*3.75 + 10000*0.3) / 1e6
      expect(r1.costUsd).toBeCloseTo(0.021, 12);
      const r2 = await model.complete(request({ messages: [userText("hi again")] }));
      // (200*3 + 100*15 + 13000*0.3) / 1e6
      expect(r2.costUsd).toBeCloseTo(0.006, 12);
      expect(model.spent.usd).toBeCloseTo(0.027, 12);
      expect(calls(run.tapePath).map((c) => c.costUsd)).toEqual([r1.costUsd, r2.costUsd]);
    } finally {
      await server.close();
    }
  });

  it("openai: cached tokens are subtracted from prompt tokens, not counted twice", async () => {
    const { ScriptedServer } = await import("../../runner/llm/scripted/server.ts");
    const server = await ScriptedServer.start(fixture("priced.yaml"));
    try {
      const run = freshRun();
      model = await createModel(
        {
          models: [
            {
              name: "o",
              provider: "openai",
              model: "scripted-priced",
              baseURL: `${server.baseURL}/v1`,
              rank: 1,
              prices,
              noApiKey: true,
              effort: "high",
            },
          ],
        },
        run.tape,
      );
      const r1 = await model.complete(request({ messages: [userText("hi")] }));
      // The server reports prompt_tokens 11000 of which cached_tokens 10000 (OpenAI has no cache-write count).
      expect(r1.usage).toEqual({ input: 1000, output: 500, cacheWrite: 0, cacheRead: 10000, reasoning: 0 });
      // (1000*3 + 500*15 + 10000*0.3) / 1e6
      expect(r1.costUsd).toBeCloseTo(0.0135, 12);
      expect(
        (calls(run.tapePath)[0]?.wire as { reasoning_effort?: string } | undefined)?.reasoning_effort,
      ).toBe("high");
    } finally {
      await server.close();
    }
  });
});
