// Attack on issue 41's recall (attacker a41c; runner/run/session/context-budget.ts #elide, #full,
// #seq; runner/llm/providers/openai.ts fromOpenAIMessage). Fixed (fix41-budget): runPass makes tool call ids unique in the pass (uniqueIds: a repeated
// id gets `-<step>`, a function of the replies alone, so a replay makes the same ids).
// Doc promise: docs/loop.md "Context budget, compaction and recall": an elided output's placeholder
// names "the tape's call that first sent it" and `recall {"id": ...}` "returns the full text of an
// elided output".
// What happened: the runner keys elided outputs by the tool call's id as the server gave it. Some
// OpenAI-compatible servers reuse ids across turns: Kimi K2/K3 ids are `{name}:{position in the
// turn}` (`emit:0` at every step), grok has answered `call_0`; clients of such servers dedupe them
// (fw-ai/fireconnect#16, openclaw#40996, QwenLM/qwen-code#5107). With such ids only the first
// output is ever elided (#elide skips an id already kept), so later ones stay whole until their
// steps are removed whole, and then they are lost to recall (#full keeps the first text per id);
// recall of `emit:0` returns out-0 whichever output the agent meant. Here the agent wants out-2
// back: no placeholder ever named it (with ids unique per call the same pass recalls it).
// (Servers that check ids refuse the request outright:
// "messages[70].tool_calls[0].id must be unique within the request".)
// Suggested fix: give every tool call a runner-made id unique in the run (e.g. keep the server's id
// for the wire only where it is unique, else suffix it `-<step>`, recorded on the tape so a replay
// makes the same), or key elided outputs by step and position rather than by the server's id.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { readTape } from "../../../runner/audit/verify.ts";
import { createModel } from "../../../runner/llm/create-model.ts";
import { Gateway } from "../../../runner/llm/gateway.ts";
import { OpenAIProvider } from "../../../runner/llm/providers/openai.ts";
import { passOn } from "../../attack/a41c-pass.ts";
import { freshRun } from "../../llm/helpers.ts";

let server: Server | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  server?.close();
});

/** Outputs of about 700 tokens: under a budget of 8,000 the first compaction comes after eight. */
const EMITS = 10;

type Wire = { messages: { role: string; content: string | null }[] };

/** A scripted stand-in for a Kimi-style server (labelled scripted): ids `emit:0`, `recall:0`. */
function kimiLike(): Promise<string> {
  let step = 0;
  const call = (name: string, input: unknown) => ({
    role: "assistant",
    content: null,
    tool_calls: [{ id: `${name}:0`, type: "function", function: { name, arguments: JSON.stringify(input) } }],
  });
  const reply = (body: Wire) => {
    step++;
    if (step <= EMITS) return call("emit", { chars: 2000 + (step - 1) * 10, tag: `out-${step - 1}` });
    if (step === EMITS + 1) {
      // The agent wants out-2 again: it reads the id its placeholder names, as a model would.
      const placeholder = body.messages.find(
        (m) => m.role === "tool" && m.content?.includes("(2020 characters)"),
      );
      const id = /"id": "([^"]+)"/.exec(placeholder?.content ?? "")?.[1] ?? "no placeholder for out-2";
      return call("recall", { id });
    }
    return call("report_done", { claim: "done", summary: "recalled" });
  };
  const listening = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Wire;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${step}`,
        object: "chat.completion",
        created: 0,
        model: "kimi-like",
        choices: [{ index: 0, message: reply(body), finish_reason: "tool_calls" }],
        usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
      }),
    );
  });
  server = listening;
  return new Promise((resolve) =>
    listening.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(listening.address() as AddressInfo).port}/v1`),
    ),
  );
}

it("a41c: recall of the id a placeholder names returns that output, with ids a server reuses", async () => {
  const baseURL = await kimiLike();
  const run = freshRun("a41c");
  gateway = new Gateway(
    [
      {
        name: "kimi-like",
        provider: new OpenAIProvider({ name: "kimi-like", model: "kimi-like", apiKey: "k", baseURL }),
        rank: "any",
        kinds: ["work", "control"],
        prices: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextBudget: () => 8000,
      },
    ],
    { audit: run.tape, retry: { maxRetries: 0 } },
  );
  const pass = await passOn(gateway, run);
  expect(pass.error?.message).toBeUndefined();
  const results = (pass.result?.messages ?? [])
    .flatMap((m) => m.content)
    .filter((b) => b.type === "tool_result");
  const recalled = results.at(-2);
  expect(recalled?.type === "tool_result" ? recalled.content.slice(0, 40) : "").toMatch(/^out-2: /);
  // The ids went out unique: a server that checks them would not refuse a request.
  for (const call of pass.tape) {
    const wire = call.wire as { messages: { tool_call_id?: string }[] };
    const ids = wire.messages.flatMap((m) => (m.tool_call_id ? [m.tool_call_id] : []));
    expect(new Set(ids).size).toBe(ids.length);
  }
  // A replay of the tape (the server's ids as recorded) makes the same ids and the same requests.
  await gateway.close();
  const again = freshRun("a41c-replay");
  gateway = (await createModel(`replay:${run.dir}`, again.tape)) as Gateway;
  const replayed = await passOn(gateway, again);
  await gateway.close();
  gateway = undefined;
  expect(replayed.error?.message).toBeUndefined();
  const end = readTape(again.tapePath).find((r) => r.kind === "event" && r.event === "replay_end");
  expect(end).toMatchObject({ data: { unused: 0 } });
});
