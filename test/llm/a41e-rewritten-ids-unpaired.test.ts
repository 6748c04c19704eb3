// a41e (attacker on issue 41's fixes): the runner's rewritten tool-call ids are on the tape's
// requests only; its responses keep the server's ids, so a call and its result no longer pair.
//
// The promise (docs/loop.md "Context budget, compaction and recall", point 8; design.md "Records":
// the audit tape is "the single source of truth"; docs/export.md: ATIF steps pair each tool call
// with its observation by id, `source_call_id`, and the OTLP export hangs a call's result on its
// tool span by id): "a repeated id (or a missing one) gets the step appended (`emit:0-7`) before
// the reply joins the history".
//
// What happened: uniqueIds (runner/run/session/conversation.ts) rewrites the ids after the gateway
// recorded the response. The tape's call record of step 2 holds a response whose tool_use id is
// `emit:0`, and the next request answers it as `emit:0-2`. Everything that reads the tape by id
// (export's ATIF `tool_call_id` vs `source_call_id`, OTLP's results map, `scifi audit show --json`
// toolCalls, which the not-found hint of `audit show --call` points to) sees calls without results,
// or, for `emit:0`, the first step's result for every step's call.
//
// Suggested fix: record the ids the history uses beside the response (e.g. the rewritten ids in the
// call record, `response.ids` or the rewritten content, written when the reply joins the history),
// and have the tape readers pair by them; a replay reads the server's ids as recorded and rewrites
// the same way.
//
// Fixed (fix41-ids): the gateway makes the reply's ids unique in the run (runner/llm/tool-ids.ts
// scopeIds: a used id gets the pass and step, from the request's `toolIdScope`) before it records
// the reply: the tape's response holds the ids the history uses. A replay reads them back, new to
// it, and keeps them. Fails without the fix: the tape says `emit:0`, the next request `emit:0-w0-2`.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { Gateway } from "../../runner/llm/gateway.ts";
import { OpenAIProvider } from "../../runner/llm/providers/openai.ts";
import { passOn } from "../attack/a41c-pass.ts";
import { freshRun } from "../llm/helpers.ts";

let server: Server | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  server?.close();
});

/** A scripted stand-in (labelled scripted) for a Kimi-style server: every call's id is `name:0`. */
function kimiLike(): Promise<string> {
  let step = 0;
  const call = (name: string, input: unknown) => ({
    role: "assistant",
    content: null,
    tool_calls: [{ id: `${name}:0`, type: "function", function: { name, arguments: JSON.stringify(input) } }],
  });
  const listening = createServer(async (req: IncomingMessage, res) => {
    for await (const _ of req);
    step++;
    const message =
      step <= 3
        ? call("emit", { chars: 100, tag: `out-${step}` })
        : call("report_done", { claim: "done", summary: "s" });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${step}`,
        object: "chat.completion",
        created: 0,
        model: "kimi-like",
        choices: [{ index: 0, message, finish_reason: "tool_calls" }],
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

it("a41e: every tool call on the tape is answered by a result of the same id in the next request", async () => {
  const baseURL = await kimiLike();
  const run = freshRun("a41e");
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
  expect(pass.tape.length).toBe(4);
  // What a tape reader pairs: call k's response's tool ids, and call k+1's last message's result ids.
  const pairs = pass.tape.slice(0, -1).map((call, k) => {
    const asked = (call.response?.content ?? []).flatMap((b) => (b.type === "tool_use" ? [b.id] : []));
    const last = pass.tape[k + 1]?.request.messages.at(-1);
    const answered = (last?.content ?? []).flatMap((b) => (b.type === "tool_result" ? [b.toolUseId] : []));
    return { asked, answered };
  });
  for (const { asked, answered } of pairs) expect(answered).toEqual(asked);
});
