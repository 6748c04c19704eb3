// The pre-scan's brief after a provider's refusal for length (runner/agents/refused-brief.ts, the
// pre-scan's own rebuild): built again under 80 % of the refused request's estimate, its task memory
// shortened by fitMemory (the newest entry whole, the older ones as titles), sent once more, and the
// retry told to onRetried (what the run puts on its history). The server is a scripted stand-in
// (labelled scripted) for a vLLM whose tokenizer counts a token a byte of non-ASCII text.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { runPrescan } from "../../runner/agents/prescan.ts";
import type { RefusedRetry } from "../../runner/agents/refused-brief.ts";
import { Gateway } from "../../runner/llm/gateway.ts";
import { OpenAIProvider } from "../../runner/llm/providers/openai.ts";
import { formatEntry } from "../../runner/memory/entries.ts";
import { parseSamString } from "../../runner/sam/parse.ts";
import { freshRun } from "../llm/helpers.ts";

let server: Server | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  server?.close();
});

const PLAN = '{"node":"root","rank":1,"skills":[],"context":"c","plan":"p","direction":"d"}';

/** Refuses past 8,000 byte-counted tokens with vLLM's 400, else answers PLAN. */
function byteTokenizer(seen: string[]): Promise<string> {
  const listening = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString("utf8")).messages);
    seen.push(text);
    const tokens = [...text].reduce((n, c) => n + (c.charCodeAt(0) < 128 ? 0.25 : Buffer.byteLength(c)), 0);
    res.writeHead(tokens > 8000 ? 400 : 200, { "content-type": "application/json" });
    if (tokens > 8000) {
      res.end(
        JSON.stringify({
          error: {
            message: `This model's maximum context length is 8000 tokens. However, your messages resulted in ${Math.round(tokens)} tokens.`,
            type: "invalid_request_error",
            code: "context_length_exceeded",
          },
        }),
      );
      return;
    }
    res.end(
      JSON.stringify({
        id: "c1",
        object: "chat.completion",
        created: 0,
        model: "vllm-like",
        choices: [{ index: 0, message: { role: "assistant", content: PLAN }, finish_reason: "stop" }],
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

it("a pre-scan refused for length is sent again with its older task memory as titles", async () => {
  const seen: string[] = [];
  const baseURL = await byteTokenizer(seen);
  const run = freshRun("r1");
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
  const parsed = parseSamString(
    "---\nname: night\n---\n# Night\n\n## To-do\nFit.\n\n## Expectation\n- Fitted.\n",
    join(run.dir, "task.md"),
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  // Three entries in Chinese: under the runner's estimate, past the server's byte count.
  const memory = [1, 2, 3]
    .map((i) =>
      formatEntry({
        id: `r1/it${i}/review`,
        time: `2026-12-04T0${i}:00:00.000Z`,
        runId: "r1",
        role: "review",
        title: `Iteration ${i}: review failed root`,
        body: `第${i}轮：${"上一轮的检查失败了，请使用第二列计算平均值。".repeat(40)}`,
      }),
    )
    .join("");
  const retried: RefusedRetry[] = [];
  const plan = await runPrescan(
    gateway,
    {
      root: parsed.sam.root,
      complete: new Set(),
      iteration: 4,
      rank: { min: 1, max: 3, suggested: 1 },
      controlRank: 1,
      taskMemory: { text: memory, ref: "memory:task:r1", sha256: "x" },
      groupMemory: undefined,
      history: "",
      skillIndex: "(none)",
      skillNames: [],
      meta: { runId: "r1" },
    },
    undefined,
    (retry) => retried.push(retry),
  );
  expect(plan.node).toBe("root");
  expect(seen).toHaveLength(2);
  // The first request held every entry whole; the second the newest whole and the older as titles.
  expect(seen[0]).not.toContain("title only");
  expect(seen[1]).toContain("Iteration 1: review failed root (title only)");
  expect(seen[1]).toContain("第3轮");
  expect(seen[1]).not.toContain("第1轮");
  expect(seen[1]).toContain("scifi shortened this task memory");
  expect(retried).toHaveLength(1);
  expect(retried[0]?.budget).toBeLessThan(6000);
  const calls = readFileSync(run.tapePath, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((r) => r.kind === "call");
  expect(calls.map((c) => c.request?.contextBudget)).toEqual([6000, retried[0]?.budget]);
});
