// Attack on issue 41's context budget (attacker a41c; runner/run/session/context-budget.ts
// countBlock "thinking", runner/llm/providers/openai.ts toOpenAIMessages). Fixed (fix41-budget): the estimate counts thinking blocks only where the wire sends them
// back (Model.sendsThinking: false for the OpenAI format; recorded as `thinkingDropped` on the
// request so a replay counts the same).
// Doc promise: docs/loop.md "Context budget, compaction and recall": "The task brief and the newest
// tool results are never elided (unless the newest output alone passes the whole budget)";
// "compaction happens every few calls, not at each one" (the prompt cache's prefix stays valid).
// What happened: a reasoning model behind an OpenAI-compatible server (vLLM's `reasoning_content`:
// Qwen3, DeepSeek-R1, gpt-oss; the cluster user's local model of issue 41) returns its reasoning
// beside each reply. The OpenAI wire never sends it back ("Thinking is not sent back: Chat
// Completions has no field for it"), but the estimate counts every thinking block of the history.
// Under a 16k window (budget 8,192) with replies of about 8,000 estimated tokens of reasoning, every
// call is a compaction point: each request drops every earlier step (the agent keeps only its last
// output) and, when the newest reply's reasoning alone passes the budget, the newest output is
// elided too, though the requests actually sent hold about a thousand tokens. The cache prefix is
// broken at every call.
// Suggested fix: estimate what the wire sends: skip thinking blocks in the OpenAI format (a
// provider-supplied `estimateBlock`, or FixedPart saying which blocks are sent); for Anthropic,
// count only the thinking the API keeps.
import { afterEach, expect, it } from "vitest";
import { readTape } from "../../../runner/audit/verify.ts";
import { createModel } from "../../../runner/llm/create-model.ts";
import type { Gateway } from "../../../runner/llm/gateway.ts";
import { closeAll, DONE, opened, passOn, scriptedPass, sent } from "../../attack/a41c-pass.ts";
import { freshRun } from "../../llm/helpers.ts";

afterEach(closeAll);

it("a41c: reasoning the OpenAI wire never sends does not elide the newest output (scripted)", async () => {
  const steps = 5;
  const run = await scriptedPass("scripted-openai", [
    "context_window: 16384",
    "work:",
    ...Array.from(
      { length: steps },
      (_, i) =>
        `  - { thinking: "${"reasoning ".repeat(2500)}", tool_calls: [{ name: emit, input: { chars: 1500, tag: "out-${i}" } }] }`,
    ),
    DONE,
  ]);
  expect(run.result?.exit.type).toBe("done");
  // What was actually sent is small: every request is far under the budget.
  for (const call of run.tape) expect(sent(call, "openai")).toBeLessThan(4000);
  // So nothing needed compacting: no context event, and each request saw its newest output whole.
  expect(run.events.filter((e) => e.type === "context")).toEqual([]);
  for (const [i, call] of run.tape.slice(1).entries()) {
    const tools = (call.wire as { messages: { role: string; content: string }[] }).messages.filter(
      (m) => m.role === "tool",
    );
    expect(tools.at(-1)?.content.startsWith(`out-${i}: `)).toBe(true);
    expect(tools).toHaveLength(i + 1);
  }
  // The requests say the estimate left the reasoning out, so a replay counts as the run did.
  expect(run.tape.every((c) => c.request.thinkingDropped === true)).toBe(true);
  await closeAll();
  const again = freshRun("a41c-replay");
  const model = (await createModel(`replay:${run.dir}`, again.tape)) as Gateway;
  opened.push(model);
  const replayed = await passOn(model, again);
  await closeAll();
  expect(replayed.error?.message).toBeUndefined();
  expect(replayed.result?.exit.type).toBe("done");
  const end = readTape(again.tapePath).find((r) => r.kind === "event" && r.event === "replay_end");
  expect(end).toMatchObject({ data: { unused: 0 } });
});
