// The gateway against scripted servers through the real SDKs: transient faults (429 with
// retry-after, 500, a hung connection, a malformed body) are retried, failing models fall back to
// another of the same rank, budgets stop the run, and every attempt is on the tape.
import { afterEach, describe, expect, it } from "vitest";
import type { ModelsConfigInput } from "../../runner/llm/config.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import { classifySdkError } from "../../runner/llm/errors.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { ScriptedServer } from "../../runner/llm/scripted/server.ts";
import { type Message, NoModelAvailable, RequestRefused } from "../../runner/llm/types.ts";
import { outcomeOfEnding, RunEnding } from "../../runner/run-ending.ts";
import { calls, freshRun, request, userText, writeScript } from "./helpers.ts";

const prices = { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 };
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
});

async function server(script: string): Promise<ScriptedServer> {
  const s = await ScriptedServer.start(writeScript(script));
  open.push(s);
  return s;
}

type Provider = "anthropic" | "openai";

function entry(name: string, s: ScriptedServer, provider: Provider, extra: Record<string, unknown> = {}) {
  return {
    name,
    provider,
    model: `scripted-${name}`,
    baseURL: provider === "openai" ? `${s.baseURL}/v1` : s.baseURL,
    rank: 1,
    prices,
    noApiKey: true,
    ...extra,
  };
}

async function gateway(config: ModelsConfigInput, retry = {}): Promise<{ model: Gateway; tapePath: string }> {
  const run = freshRun();
  const model = await createModel(config, run.tape, {
    retry: { baseDelayMs: 20, maxDelayMs: 5000, timeoutMs: 2000, ...retry },
    random: () => 0.5,
  });
  open.push(model);
  return { model, tapePath: run.tapePath };
}

const hello = () => request({ messages: [userText("hello")] });

describe.each<Provider>(["anthropic", "openai"])("transient faults, %s wire format", (provider) => {
  it("429 with retry-after: waits the time the server asked for, then succeeds", async () => {
    const s = await server(`work:\n  - status: 429\n    retry_after: 1\n  - text: "after the wait"\n`);
    const { model, tapePath } = await gateway({ models: [entry("a", s, provider)] });
    const t0 = performance.now();
    const reply = await model.complete(hello());
    expect(performance.now() - t0).toBeGreaterThanOrEqual(990);
    expect(reply.content).toEqual([{ type: "text", text: "after the wait" }]);
    const [record] = calls(tapePath);
    expect(record?.attempts).toMatchObject([
      { outcome: "retry", reason: "rate_limit", status: 429, delayMs: 1000 },
    ]);
  });

  it("500 is retried with backoff", async () => {
    const s = await server(`work:\n  - status: 500\n  - status: 503\n  - text: "third time"\n`);
    const { model, tapePath } = await gateway({ models: [entry("a", s, provider)] });
    expect((await model.complete(hello())).content).toEqual([{ type: "text", text: "third time" }]);
    const attempts = calls(tapePath)[0]?.attempts ?? [];
    expect(attempts.map((a) => [a.outcome, a.reason, a.status])).toEqual([
      ["retry", "server_error", 500],
      ["retry", "server_error", 503],
    ]);
    // Exponential: 20 ms then 40 ms at jitter 0.5 -> 75 % of the step.
    expect(attempts.map((a) => a.delayMs)).toEqual([15, 30]);
  });

  it("a hung connection times out and is retried", async () => {
    const s = await server(`work:\n  - hang: true\n  - text: "awake"\n`);
    const { model, tapePath } = await gateway({ models: [entry("a", s, provider)] }, { timeoutMs: 400 });
    expect((await model.complete(hello())).content).toEqual([{ type: "text", text: "awake" }]);
    const [attempt] = calls(tapePath)[0]?.attempts ?? [];
    expect(attempt).toMatchObject({ outcome: "retry", reason: "timeout" });
    expect(attempt?.latencyMs).toBeGreaterThanOrEqual(380);
  });

  it("a malformed body is retried", async () => {
    const s = await server(`work:\n  - malformed: true\n  - text: "well formed"\n`);
    const { model, tapePath } = await gateway({ models: [entry("a", s, provider)] });
    expect((await model.complete(hello())).content).toEqual([{ type: "text", text: "well formed" }]);
    expect(calls(tapePath)[0]?.attempts).toMatchObject([{ outcome: "retry", reason: "malformed" }]);
  });

  it("falls back to another model of the same rank when one keeps failing", async () => {
    const bad = await server(`work:\n  - status: 500\n  - status: 500\n`);
    const good = await server(`work:\n  - text: "from b"\n`);
    const { model, tapePath } = await gateway(
      { models: [entry("a", bad, provider), entry("b", good, provider)] },
      { maxRetries: 1 },
    );
    const reply = await model.complete(hello());
    expect(reply.model).toBe("scripted-b");
    const [record] = calls(tapePath);
    expect(record?.entry).toBe("b");
    expect(record?.attempts.map((a) => [a.entry, a.outcome, a.reason])).toEqual([
      ["a", "retry", "server_error"],
      ["a", "fallback", "server_error"],
    ]);
  });
});

describe("selection, fallback and budgets", () => {
  it("fails with ModelsUnreachable (an outage: cause model) when every model of the rank fails, and records the failure", async () => {
    const a = await server(`work:\n  - status: 500\n`);
    const b = await server(`work:\n  - status: 529\n`);
    const { model, tapePath } = await gateway(
      { models: [entry("a", a, "anthropic"), entry("b", b, "anthropic")] },
      { maxRetries: 0 },
    );
    const error = await model.complete(hello()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoModelAvailable);
    expect(error).toMatchObject({
      name: "ModelsUnreachable",
      message: expect.stringMatching(
        /no work model of rank 1 could answer \(tried a: server_error, b: server_error\)/,
      ),
    });
    expect(outcomeOfEnding(error as Error)).toMatchObject({
      status: "failed",
      limit: "model",
      cause: "model",
    });
    const [record] = calls(tapePath);
    expect(record?.error?.name).toBe("ModelsUnreachable");
    expect(record?.attempts.map((x) => x.outcome)).toEqual(["fallback", "fail"]);
  });

  it("picks the requested kind and rank and balances round-robin among equals", async () => {
    const replies = `work:\n${'  - text: "x"\n'.repeat(4)}review:\n  - text: "r"\n`;
    const a = await server(replies);
    const b = await server(replies);
    const c = await server(replies);
    const { model } = await gateway({
      models: [
        entry("a", a, "anthropic"),
        entry("b", b, "openai"),
        entry("strong", c, "anthropic", { rank: 3, kinds: ["control"] }),
      ],
    });
    const used = [];
    for (let i = 0; i < 4; i++) used.push((await model.complete(hello())).model);
    expect(used).toEqual(["scripted-a", "scripted-b", "scripted-a", "scripted-b"]);
    const review = await model.complete(
      request({ role: "review", kind: "control", rank: 3, messages: [userText("?")] }),
    );
    expect(review.model).toBe("scripted-strong");
    await expect(
      model.complete(request({ kind: "work", rank: 2, messages: [userText("?")] })),
    ).rejects.toThrow(
      /no model is configured for kind 'work' at rank 2; configured: a \(rank 1, control\/work\)/,
    );
  });

  it("disables a model whose budget is spent and moves to the next of its rank", async () => {
    const a = await server(
      `work:\n  - text: "a1"\n    usage: { input: 1000000, output: 0 }\n  - text: "a2"\n`,
    );
    const b = await server(`work:\n  - text: "b1"\n  - text: "b2"\n`);
    const { model, tapePath } = await gateway({
      models: [entry("a", a, "anthropic", { budgetUsd: 2 }), entry("b", b, "anthropic")],
    });
    expect((await model.complete(hello())).model).toBe("scripted-a"); // costs 3 USD: over a's budget of 2
    expect((await model.complete(hello())).model).toBe("scripted-b");
    expect((await model.complete(hello())).model).toBe("scripted-b"); // a stays disabled
    const { readTape } = await import("../../runner/audit/verify.ts");
    const events = readTape(tapePath).filter((r) => r.kind === "event");
    // Each model's context window is recorded where the gateway is made, then the budget's event.
    expect(events).toMatchObject([
      {
        event: "context_window",
        data: { entry: "a", window: 32_768, source: "default", promptBudget: 32_768 - 8192 },
      },
      { event: "context_window", data: { entry: "b", window: 32_768, source: "default" } },
      { event: "model_disabled", data: { entry: "a", reason: "budget" } },
    ]);
    expect(calls(tapePath)[2]?.attempts).toMatchObject([
      { entry: "a", outcome: "fallback", reason: "budget" },
    ]);
  });

  it("every model's budget spent is NoModelAvailable, not an outage: no cause, asking again ends the same way", async () => {
    const a = await server(
      `work:\n  - text: "a1"\n    usage: { input: 1000000, output: 0 }\n  - text: "a2"\n`,
    );
    const { model, tapePath } = await gateway({ models: [entry("a", a, "anthropic", { budgetUsd: 2 })] });
    await model.complete(hello()); // costs 3 USD: over a's budget of 2
    const error = await model.complete(hello()).catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: "NoModelAvailable",
      message: expect.stringMatching(/\(tried a: budget\)/),
    });
    const ending = outcomeOfEnding(error as Error);
    expect(ending).toMatchObject({ status: "failed", limit: "model" });
    expect(ending.cause).toBeUndefined();
    expect(calls(tapePath)[1]?.error?.name).toBe("NoModelAvailable");
  });

  it("stops with BudgetExceeded once the run's USD or token budget is spent", async () => {
    const a = await server(
      `work:\n  - text: "one"\n    usage: { input: 1000, output: 1000, cache_read: 0, cache_write: 0 }\n  - text: "two"\n`,
    );
    const { model, tapePath } = await gateway({
      models: [entry("a", a, "anthropic")],
      budget: { tokens: 1500 },
    });
    await model.complete(hello());
    await expect(model.complete(hello())).rejects.toMatchObject({
      name: "BudgetExceeded",
      message: "the run's budget of 1500 tokens is spent (2000 tokens)",
    });
    const { readTape } = await import("../../runner/audit/verify.ts");
    expect(readTape(tapePath).map((r) => (r.kind === "event" ? r.event : r.kind))).toEqual([
      "context_window",
      "call",
      "budget_exceeded",
    ]);
  });

  it("does not retry or fall back on a rejected request (4xx): the request itself is wrong", async () => {
    const a = await server(`work:\n  - status: 400\n    message: "messages: roles must alternate"\n`);
    const b = await server(`work:\n  - text: "never asked"\n`);
    const { model, tapePath } = await gateway({
      models: [entry("a", a, "anthropic"), entry("b", b, "anthropic")],
    });
    const refused = await model.complete(hello()).catch((e: unknown) => e);
    expect((refused as Error).message).toMatch(
      /^a refused the request as invalid \(HTTP 400\): .*roles must alternate/,
    );
    // It ends the run failed (an outcome), never a crash without one that eval counts as an error.
    expect(refused).toBeInstanceOf(RequestRefused);
    expect(refused).toBeInstanceOf(RunEnding);
    expect(b.remaining()).toEqual({ work: 1 });
    expect(calls(tapePath)[0]?.error?.name).toBe("RequestRefused");
  });

  it.each<Provider>(["anthropic", "openai"])(
    "a 400 for an account without credit is that model's outage (%s): the next model answers; with none, ModelsUnreachable (AE-9)",
    async (provider) => {
      const credit = `work:\n  - status: 400\n    message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."\n`;
      const a = await server(`${credit}${credit.slice("work:\n".length)}`);
      const b = await server(`work:\n  - text: "b answers"\n`);
      const both = await gateway({ models: [entry("a", a, provider), entry("b", b, provider)] });
      expect((await both.model.complete(hello())).content).toEqual([{ type: "text", text: "b answers" }]);
      expect(calls(both.tapePath)[0]?.attempts).toMatchObject([
        { entry: "a", outcome: "fallback", reason: "billing", status: 400 },
      ]);
      const alone = await gateway({ models: [entry("a", a, provider)] });
      const error = await alone.model.complete(hello()).catch((e: unknown) => e);
      expect(error).toMatchObject({
        name: "ModelsUnreachable",
        message: expect.stringMatching(/tried a: billing/),
      });
      expect(outcomeOfEnding(error as Error).cause).toBe("model");
    },
  );

  it.each<Provider>(["anthropic", "openai"])(
    "a 404 (a wrong baseURL, an unknown model name) is that model's outage (%s): ModelsUnreachable, not the task's failure",
    async (provider) => {
      const a = await server(`work:\n  - status: 404\n    message: "model: scripted-nope"\n`);
      const { model, tapePath } = await gateway({ models: [entry("a", a, provider)] });
      const error = await model.complete(hello()).catch((e: unknown) => e);
      expect(error).toMatchObject({
        name: "ModelsUnreachable",
        message: expect.stringMatching(/tried a: not_found/),
      });
      expect(outcomeOfEnding(error as Error).cause).toBe("model");
      expect(calls(tapePath)[0]?.attempts).toMatchObject([{ entry: "a", reason: "not_found", status: 404 }]);
    },
  );

  it("a 400 that merely quotes a billing sentence (the run's own text) stays the run's refused request", async () => {
    const a = await server(
      `work:\n  - status: 400\n    message: "messages.3: 'Your credit balance is too low' is not a valid role"\n`,
    );
    const { model } = await gateway({ models: [entry("a", a, "anthropic")] });
    expect(await model.complete(hello()).catch((e: unknown) => e)).toBeInstanceOf(RequestRefused);
  });
});

describe("what an API error body says of the account (classifySdkError)", () => {
  const sdkError = (status: number, body: unknown) =>
    Object.assign(new Error("sdk"), { status, error: body, headers: new Headers() });
  it.each<[string, number, unknown, string]>([
    ["402 Payment Required", 402, { error: { type: "invalid_request_error", message: "pay" } }, "billing"],
    [
      "Anthropic billing_error",
      400,
      { type: "error", error: { type: "billing_error", message: "x" } },
      "billing",
    ],
    [
      "OpenAI insufficient_quota",
      429,
      { message: "You exceeded your current quota", code: "insufficient_quota" },
      "billing",
    ],
    [
      "Usage is blocked",
      400,
      { error: { message: "Usage is blocked due to insufficient credits." } },
      "billing",
    ],
    [
      "context window",
      400,
      {
        error: {
          type: "invalid_request_error",
          message: "prompt is too long: 210000 tokens > 200000 maximum",
        },
      },
      "context_length",
    ],
    [
      "OpenAI context window",
      400,
      {
        error: {
          type: "invalid_request_error",
          code: "context_length_exceeded",
          message:
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        },
      },
      "context_length",
    ],
    [
      "vLLM context window (no code)",
      400,
      {
        error: {
          type: "BadRequestError",
          message:
            "This model's maximum context length is 32768 tokens. However, you requested 33000 tokens (32000 in the messages, 1000 in the completion).",
        },
      },
      "context_length",
    ],
    [
      "a 400 whose message only quotes the words later",
      400,
      {
        error: {
          type: "invalid_request_error",
          message: "messages.3: bad block: prompt is too long: 1 tokens > 0 maximum",
        },
      },
      "invalid_request",
    ],
    ["plain rate limit", 429, { error: { type: "rate_limit_error", message: "slow down" } }, "rate_limit"],
  ])("%s", (_label, status, body, reason) => {
    expect(classifySdkError(sdkError(status, body), "p").reason).toBe(reason);
  });

  it("a local RangeError (a body that cannot be built) is the run's refused request, not a failed connection", () => {
    expect(classifySdkError(new RangeError("Invalid string length"), "p").reason).toBe("invalid_request");
  });
});

describe("cancellation", () => {
  it("an aborted call is not retried and is recorded", async () => {
    const s = await server(`work:\n  - hang: true\n  - text: "never"\n`);
    const { model, tapePath } = await gateway(
      { models: [entry("a", s, "anthropic")] },
      { timeoutMs: 10_000 },
    );
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const t0 = performance.now();
    await expect(model.complete(hello(), controller.signal)).rejects.toMatchObject({ name: "ProviderError" });
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(s.remaining()).toEqual({ work: 1 });
    expect(calls(tapePath)[0]?.error?.message).toMatch(/abort/i);
  });

  it("a request for a rank nobody serves is on the tape too", async () => {
    const s = await server(`work:\n  - text: "x"\n`);
    const { model, tapePath } = await gateway({ models: [entry("a", s, "anthropic")] });
    await expect(model.complete(request({ rank: 4, messages: [userText("?")] }))).rejects.toMatchObject({
      name: "NoModelAvailable",
    });
    expect(calls(tapePath)[0]).toMatchObject({ provider: "none", error: { name: "NoModelAvailable" } });
  });
});

describe("sent history", () => {
  it.each<Provider>(["anthropic", "openai"])(
    "is frozen once sent (%s): editing it throws, appending goes on, and the tape keeps what was sent",
    async (provider) => {
      const s = await server(`work:\n  - text: "first"\n  - text: "second"\n`);
      const { model, tapePath } = await gateway({ models: [entry("a", s, provider)] });
      const history: Message[] = [userText("the original question")];
      const first = await model.complete(request({ messages: history }));
      const sent = history[0];
      const block = sent?.content[0];
      if (block?.type !== "text") throw new Error("expected the text block");
      // Strict-mode assignment to a frozen object throws instead of silently rewriting history.
      expect(() => {
        block.text = "a rewritten question";
      }).toThrow(TypeError);
      expect(() => sent?.content.push({ type: "text", text: "more" })).toThrow(TypeError);
      // The history array itself stays the caller's to append to.
      history.push({ role: "assistant", content: first.content }, userText("a follow-up"));
      await model.complete(request({ messages: history }));
      const [one, two] = calls(tapePath);
      expect(one?.request.messages).toEqual([userText("the original question")]);
      expect(two?.request.messages).toEqual([
        userText("the original question"),
        { role: "assistant", content: [{ type: "text", text: "first" }] },
        userText("a follow-up"),
      ]);
    },
  );
});
