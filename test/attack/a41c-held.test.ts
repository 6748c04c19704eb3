// Attacks on issue 41's context budget, compaction and recall that held (attacker a41c; written from
// docs/loop.md, docs/models.md and docs/scripted.md first, then the code; no real LLM: the scripted
// model over real HTTP, in both wire formats). What broke is in test/open/a41c-*.pending.ts.
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { CallRecord } from "../../runner/audit/types.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { serverWindow } from "../../runner/llm/context-window.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import type { Message } from "../../runner/llm/types.ts";
import { ContextKeeper } from "../../runner/run/session/context-budget.ts";
import { freshRun } from "../llm/helpers.ts";
import { closeAll, DONE, emits, opened, passOn, scriptedPass, sent } from "./a41c-pass.ts";

afterEach(closeAll);

const FORMATS = [
  ["scripted", "anthropic"],
  ["scripted-openai", "openai"],
] as const;

/** Every request fits the budget as the scripted model counts it, and none was refused. */
function allInside(tape: CallRecord[], format: "anthropic" | "openai"): void {
  expect(tape.filter((c) => c.error).map((c) => c.error?.message)).toEqual([]);
  for (const call of tape) expect(sent(call, format)).toBeLessThanOrEqual(call.request.contextBudget ?? 0);
}

/** Between two compaction points every request extends the one before (the cache prefix holds). */
function prefixKept(run: Awaited<ReturnType<typeof scriptedPass>>): void {
  const compactions = run.events.filter((e) => e.type === "context").length;
  let extended = 0;
  for (let i = 1; i < run.tape.length; i++) {
    const before = JSON.stringify(run.tape[i - 1]?.request.messages);
    const now = JSON.stringify(run.tape[i]?.request.messages);
    if (now.startsWith(before.slice(0, -1))) extended++;
  }
  expect(extended).toBe(run.tape.length - 1 - compactions);
}

describe.each(FORMATS)("a41c held: outputs that cost more than they look (%s)", (scheme, format) => {
  // Control characters (six JSON bytes each), CJK (three UTF-8 bytes), emoji (four), quotes and
  // backslashes (two), a lone surrogate (escaped by JSON.stringify): each output capped by the
  // estimate's measure, so it fits, and its recall too.
  it.each([
    ["control", "\\x01\\x02\\x1b"],
    ["cjk", "漢字テキスト"],
    ["emoji", "😀🧪"],
    ["escapes", '\\"\\\\'],
    ["lone surrogate", "\\ud800x"],
  ])("%s", async (_name, unit) => {
    const run = await scriptedPass(scheme, [
      "context_window: 12000",
      "work:",
      ...Array.from(
        { length: 6 },
        (_, i) => `  - tool_calls: [{ name: blob, input: { unit: "${unit}", times: 20000, tag: "b-${i}" } }]`,
      ),
      "  - tool_calls: [{ name: recall, input: { id: toolu_scripted_1_0 } }]",
      "  - tool_calls: [{ name: recall, input: { id: call_scripted_1_0 } }]",
      DONE,
    ]);
    expect(run.error?.message).toBeUndefined();
    expect(run.result?.exit.type).toBe("done");
    allInside(run.tape, format);
    // The newest output always reached the model whole (capped, never a placeholder).
    for (const call of run.tape.slice(1)) {
      const last = JSON.stringify(call.request.messages.at(-1));
      expect(last).not.toContain("[scifi elided this tool output");
    }
  });

  it("ten parallel calls at the output cap in one step", async () => {
    const parallel = Array.from(
      { length: 10 },
      (_, i) => `{ name: emit, input: { chars: 9000, tag: "p-${i}" } }`,
    );
    const run = await scriptedPass(scheme, [
      "context_window: 16000",
      "work:",
      ...emits(2, 3000),
      `  - tool_calls: [${parallel.join(", ")}]`,
      ...emits(2, 3000, (i) => `after-${i}`),
      DONE,
    ]);
    expect(run.result?.exit.type).toBe("done");
    allInside(run.tape, format);
  });

  it("a long top-level input of the model's own (a file it writes) is shortened", async () => {
    const run = await scriptedPass(scheme, [
      "context_window: 16384",
      "work:",
      ...emits(2, 1000),
      `  - tool_calls: [{ name: emit, input: { chars: 10, tag: ${JSON.stringify("t".repeat(34_000))} } }]`,
      ...emits(3, 1000, (i) => `after-${i}`),
      DONE,
    ]);
    expect(run.result?.exit.type).toBe("done");
    allInside(run.tape, format);
  });

  it("recall as a probe: paths, indexes, prototype names, another pass's id", async () => {
    const probes = [
      "../audit.jsonl",
      "/etc/passwd",
      "-1",
      "99999999999999999999",
      "__proto__",
      "constructor",
      "toolu_scripted_1_0 ",
      "TOOLU_SCRIPTED_1_0",
      "record 3",
    ];
    const genuine = format === "anthropic" ? "toolu_scripted_1_0" : "call_scripted_1_0";
    const run = await scriptedPass(scheme, [
      "context_window: 20000",
      "work:",
      ...emits(12, 3000),
      // All in one step (each a failing call: one step, not a stall).
      `  - tool_calls: [${[...probes, genuine].map((id) => `{ name: recall, input: { id: ${JSON.stringify(id)} } }`).join(", ")}]`,
      DONE,
    ]);
    expect(run.result?.exit.type).toBe("done");
    const results = (run.result?.messages ?? [])
      .flatMap((m) => m.content)
      .filter((b) => b.type === "tool_result");
    const answers = results.slice(12, 12 + probes.length);
    for (const answer of answers)
      expect(answer.type === "tool_result" && answer.content).toMatch(
        /^No shortened tool output has the id /,
      );
    // A second pass on the same model recalls the first pass's elided id: nothing.
    const next = await scriptedPass(
      scheme,
      [
        "context_window: 20000",
        "work:",
        `  - tool_calls: [{ name: recall, input: { id: ${genuine} } }]`,
        DONE,
      ],
      { scriptName: "second-pass.yaml" },
    );
    const first = (next.result?.messages ?? [])
      .flatMap((m) => m.content)
      .find((b) => b.type === "tool_result");
    expect(first?.type === "tool_result" && first.content).toMatch(/^No shortened tool output has the id /);
  });

  it("a refusal for length right after the retry ends the pass: exactly one retry", async () => {
    const words =
      format === "anthropic"
        ? "prompt is too long: 30000 tokens > 20000 maximum"
        : "This model's maximum context length is 20000 tokens. However, your messages resulted in 30000 tokens. Please reduce the length of the messages.";
    const refusal = `  - { status: 400, message: ${JSON.stringify(words)} }`;
    const run = await scriptedPass(scheme, [
      "context_window: 20000",
      "work:",
      ...emits(4, 3000),
      refusal,
      refusal,
      DONE,
    ]);
    expect(run.error?.name).toBe("ContextTooLong");
    expect(run.events.filter((e) => e.type === "context" && e.action === "retried")).toHaveLength(1);
    expect(run.tape.filter((c) => c.error).map((c) => c.error?.name)).toEqual([
      "ContextTooLong",
      "ContextTooLong",
    ]);
  });

  it("a compacting pass keeps the cache prefix between its compaction points", async () => {
    const run = await scriptedPass(scheme, ["context_window: 20000", "work:", ...emits(40, 3000), DONE]);
    expect(run.result?.exit.type).toBe("done");
    allInside(run.tape, format);
    prefixKept(run);
  });
});

it("a41c held: 1,500 short steps in the Anthropic format stay inside a 30,000-token window (scripted)", async () => {
  // The OpenAI format's twin breaks (test/open/a41c-small-steps.pending.ts): there the wire repeats
  // each call's id in two JSON objects.
  const run = await scriptedPass("scripted", [
    "context_window: 30000",
    "work:",
    ...emits(1500, 1, (i) => i.toString(36)),
    DONE,
  ]);
  expect(run.result?.exit.type).toBe("done");
  allInside(run.tape, "anthropic");
}, 120_000);

describe("a41c held: what a server says of its window (GET /models)", () => {
  const servers: Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
  });
  const serve = (handler: RequestListener): Promise<string> => {
    const server = createServer(handler);
    servers.push(server);
    return new Promise((resolve) =>
      server.listen(0, "127.0.0.1", () =>
        resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
      ),
    );
  };
  const listing =
    (entry: Record<string, unknown>): RequestListener =>
    (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ data: [{ id: "m", ...entry }] }));
    };

  it.each([
    ["zero", { max_model_len: 0 }],
    ["negative", { max_model_len: -4096 }],
    ["a string", { max_model_len: "32768" }],
    ["a fraction", { max_model_len: 32768.5 }],
    ["true", { max_model_len: true }],
    ["a list", { max_model_len: [32768] }],
    ["null", { max_model_len: null }],
    ["missing", {}],
  ])("%s is not a window: the family's or the default applies", async (_name, entry) => {
    expect(await serverWindow(`${await serve(listing(entry))}/v1`, "m", "key")).toBeUndefined();
  });

  it("a __proto__ key in the listing is not read as the window", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200);
      res.end('{"data":[{"id":"m","__proto__":{"max_model_len":7}}]}');
    });
    expect(await serverWindow(`${url}/v1`, "m", "key")).toBeUndefined();
  });

  it("a server that never answers, or drips its answer, costs the start 3 s, no more", async () => {
    const hang = await serve(() => {});
    const drip = await serve((_req, res) => {
      res.writeHead(200);
      res.write('{"data":[{"id":"m","max_model_len":');
      const timer = setInterval(() => res.write(" "), 100);
      res.on("close", () => clearInterval(timer));
    });
    const started = Date.now();
    const told = await Promise.all([
      serverWindow(`${hang}/v1`, "m", "k"),
      serverWindow(`${drip}/v1`, "m", "k"),
    ]);
    expect(told).toEqual([undefined, undefined]);
    expect(Date.now() - started).toBeLessThan(6000);
  });

  it("a redirect to another origin is followed without the API key", async () => {
    let authorization: string | undefined = "not asked";
    const other = await serve((req, res) => {
      authorization = req.headers.authorization;
      listing({ max_model_len: 4096 })(req, res);
    });
    const home = await serve((_req, res) => {
      res.writeHead(302, { location: `${other.replace("127.0.0.1", "localhost")}/v1/models` });
      res.end();
    });
    expect(await serverWindow(`${home}/v1`, "m", "secret-key")).toBe(4096);
    expect(authorization).toBeUndefined();
  });
});

describe("a41c held: recall of what was already shortened, and replay of a refusal", () => {
  it("an output elided, then its step removed whole, is recalled as the full text, not its placeholder", () => {
    const keeper = new ContextKeeper(4000);
    const fixed = { system: "s", tools: [], workspaceContext: "w" };
    const step = (id: string, chars: number): Message[] => [
      { role: "assistant", content: [{ type: "tool_use", id, name: "emit", input: {} }] },
      {
        role: "user",
        content: [{ type: "tool_result", toolUseId: id, content: `${id}: ${"y".repeat(chars)}` }],
      },
    ];
    const brief: Message = { role: "user", content: [{ type: "text", text: "brief" }] };
    const first = keeper.fit(fixed, [brief, ...["a", "b", "c", "d"].flatMap((id) => step(id, 3000))]);
    const placeholder = first?.messages[2]?.content[0];
    expect(placeholder?.type === "tool_result" && placeholder.content).toMatch(/^\[scifi elided/);
    // Later, refused for length: the budget falls, and the step holding the placeholder goes whole.
    keeper.budget = 600;
    const later = keeper.fit(fixed, [...(first?.messages ?? []), ...step("e", 300)], true);
    expect(JSON.stringify(later?.messages)).not.toContain('"toolUseId":"a"');
    expect(keeper.recall("a")).toBe(`a: ${"y".repeat(3000)}`);
  });

  it.each(FORMATS)(
    "a refusal for length and its compacted retry replay with 0 divergences (%s)",
    async (scheme, format) => {
      const words =
        format === "anthropic"
          ? "prompt is too long: 30000 tokens > 20000 maximum"
          : "This model's maximum context length is 20000 tokens. However, your messages resulted in 30000 tokens. Please reduce the length of the messages.";
      const recorded = await scriptedPass(scheme, [
        "context_window: 20000",
        "work:",
        ...emits(8, 3000),
        `  - { status: 400, message: ${JSON.stringify(words)} }`,
        ...emits(4, 3000, (i) => `b-${i}`),
        DONE,
      ]);
      expect(recorded.events.filter((e) => e.type === "context" && e.action === "retried")).toHaveLength(1);
      await closeAll();
      const again = freshRun("a41c-replay");
      const model = (await createModel(`replay:${recorded.dir}`, again.tape)) as Gateway;
      opened.push(model);
      const replayed = await passOn(model, again);
      await closeAll();
      expect(replayed.error?.message).toBeUndefined();
      expect(replayed.events.map((e) => (e.type === "context" ? e.action : ""))).toEqual(
        recorded.events.map((e) => (e.type === "context" ? e.action : "")),
      );
      const end = readTape(again.tapePath).find((r) => r.kind === "event" && r.event === "replay_end");
      expect(end).toMatchObject({ data: { unused: 0 } });
    },
  );
});
