// a41e (attacker on issue 41's fixes): a single call (pre-scan, final review, review verdict,
// critique: structuredCall) refused by the provider as too long is never shortened and retried.
// Fixed (fix41-single): structuredCall catches ContextTooLong once, lowers the call's budget to 80 %
// of the refused request's estimate (runner/agents/refused-brief.ts), builds the brief again (the
// caller's rebuild, or its largest text cut with the runner's note), records the lowered budget on
// the retry's tape record and tells onRetried (the pre-scan and final review put a `context`
// event, `retried`, on the history), and sends once more.
//
// The promise (issue 41, "What to build" 1: "If a provider still refuses a request as too long, the
// runner compacts and retries once, recorded, before giving up"; docs/loop.md point 6 for passes:
// "the estimate is an estimate; a provider's tokenizer may count more"). The estimate counts three
// UTF-8 bytes a token: CJK text is one token a character and an emoji 1.3, where a tokenizer with
// byte fallback (Llama, Mistral behind vLLM) counts up to one token a byte. A pre-scan whose task
// memory, SAM or history is in Chinese, or full of an agent's emoji, is estimated under the budget
// and refused.
//
// What happened: runner/agents/structuredCall sends once; a ContextTooLong from the gateway is
// thrown on at once (the catch only handles StructuredOutputError): the run ends failed at its
// pre-scan (or final review) on the provider's 400, where a pass would have lowered its budget to
// 80 % of the refused request's estimate and tried once more.
//
// Suggested fix: on ContextTooLong, lower the call's budget to 80 % of the refused request's
// estimate (as ContextKeeper.refused does), rebuild the brief with it (fitMemory, newestLines,
// quoteShare take the budget), record the lowered budget, and send once more; a replay meets the
// same recorded refusal and shortens the same way.

import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { z } from "zod";
import { structuredCall } from "../../runner/agents/structured.ts";
import { Gateway } from "../../runner/llm/gateway.ts";
import { OpenAIProvider } from "../../runner/llm/providers/openai.ts";
import { freshRun } from "../llm/helpers.ts";

let server: Server | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  server?.close();
});

/**
 * A scripted stand-in (labelled scripted) for a vLLM server whose tokenizer counts a token a byte of
 * non-ASCII text: it refuses a request past 8,000 such tokens with vLLM's 400, else answers the plan.
 */
function byteTokenizer(seen: number[]): Promise<string> {
  const listening = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const text = JSON.stringify(JSON.parse(body).messages);
    const tokens = [...text].reduce((n, c) => n + (c.charCodeAt(0) < 128 ? 0.25 : Buffer.byteLength(c)), 0);
    seen.push(Math.round(tokens));
    if (tokens > 8000) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          error: {
            message: `This model's maximum context length is 8000 tokens. However, your messages resulted in ${Math.round(tokens)} tokens. Please reduce the length of the messages.`,
            type: "invalid_request_error",
            param: "messages",
            code: "context_length_exceeded",
          },
        }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 0,
        model: "vllm-like",
        choices: [
          { index: 0, message: { role: "assistant", content: '{"plan": "p"}' }, finish_reason: "stop" },
        ],
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

it("a41e: a single call refused for length is shortened and sent once more", async () => {
  const seen: number[] = [];
  const retried: { budget: number; tokensBefore: number; tokensAfter: number }[] = [];
  const baseURL = await byteTokenizer(seen);
  const run = freshRun("a41e");
  gateway = new Gateway(
    [
      {
        name: "vllm-like",
        provider: new OpenAIProvider({ name: "vllm-like", model: "vllm-like", apiKey: "k", baseURL }),
        rank: "any",
        kinds: ["work", "control"],
        prices: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextBudget: () => 6000,
      },
    ],
    { audit: run.tape, retry: { maxRetries: 0 } },
  );
  // Task memory in Chinese, as the pre-scan's brief would carry it: under the runner's estimate of
  // 6,000 tokens (about 4,000), past the server's 8,000 (12,000 bytes).
  const memory = "上一轮的检查失败了，请使用第二列计算平均值。".repeat(180);
  let error: Error | undefined;
  const result = await structuredCall(
    gateway,
    {
      role: "prescan",
      kind: "control",
      rank: 1,
      system: "Plan the next pass.",
      messages: [{ role: "user", content: [{ type: "text", text: `Task memory:\n${memory}` }] }],
      meta: { runId: "a41e" },
    },
    z.object({ plan: z.string() }),
    "plan",
    undefined,
    { parts: [], onRetried: (r) => retried.push(r) },
  ).catch((e: Error) => {
    error = e;
    return undefined;
  });
  expect(seen.length, `requests the server saw: ${seen.join(", ")}`).toBe(2);
  // The second request is shorter than the refused one (here nothing but the message can shrink:
  // the fix belongs where the brief is built; this asserts only the shortened second try).
  expect(seen[1] ?? Infinity).toBeLessThan(seen[0] ?? 0);
  if (!error) expect(result?.value.plan).toBe("p");
  // Recorded as a pass's retry is: the refused call, then the retry under the lowered budget.
  expect(retried).toHaveLength(1);
  expect(retried[0]?.budget).toBe(Math.floor(0.8 * (retried[0]?.tokensBefore ?? 0)));
  expect(retried[0]?.tokensAfter).toBeLessThan(retried[0]?.budget ?? 0);
  const calls = readFileSync(run.tapePath, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((r) => r.kind === "call");
  expect(calls.map((c) => c.request?.contextBudget)).toEqual([6000, retried[0]?.budget]);
  expect(calls[0]?.error?.name).toBe("ContextTooLong");
  expect(JSON.stringify(calls[1]?.request?.messages)).toContain("[scifi cut the text above from");
});
