// Attack on issue 41's context budget (attacker a41c; runner/run/session/context-budget.ts
// estimate, countBlock). Fixed (fix41-budget): countBlock measures each block as its wire carries it (keys, quotes,
// escapes, in the larger of the two formats) and counts each tool call id, with the call and with
// its result, at a character a token.
// Doc promise: docs/loop.md "Context budget, compaction and recall": "Before each call it estimates
// the request from above"; issue 41's acceptance: a pass under a small scripted window "passes with
// no request past the window, in both wire formats"; the night of 500 tool calls.
// What happened: the estimate counts a tool call as its name and input plus 12 tokens, and a tool
// result as its text plus 12, but never the call's id, which the wire carries twice (OpenAI: the
// assistant's `tool_calls[].id` and the tool message's `tool_call_id`, each in its own JSON
// object). For long outputs the 12 covers it; for a night of short steps (a `test -f`, a `grep -c`,
// an empty output) each step costs the wire about a fifth more than the estimate. Under a
// 30,000-token scripted window in the OpenAI format the pass of 1,500 short steps sends a request the
// scripted model refuses as past its window (the runner estimated it under 85 % of the budget);
// the retry saves the pass, but a real provider's ids (random base62, about two characters a token)
// cost even more than the scripted model's.
// Suggested fix: count each tool_use and tool_result block's id (at a character a token, as random
// ids tokenize) and its wire's keys in countBlock, or measure the wire's own JSON per block.
import { afterEach, expect, it } from "vitest";
import { closeAll, DONE, emits, scriptedPass, sent } from "../../attack/a41c-pass.ts";

afterEach(closeAll);

it("a41c: 1,500 short steps under a 30,000-token window send no request past it (scripted, OpenAI)", async () => {
  const run = await scriptedPass("scripted-openai", [
    "context_window: 30000",
    "work:",
    ...emits(1500, 1, (i) => i.toString(36)),
    DONE,
  ]);
  expect(run.result?.exit.type).toBe("done");
  const budget = run.tape[0]?.request.contextBudget ?? 0;
  expect(budget).toBe(30000 - 8192);
  // A refused request has no wire on the tape: its error names the tokens the window refused.
  const over = run.tape.filter((c) => c.error !== undefined || sent(c, "openai") > budget);
  expect(over.map((c) => c.error?.message ?? `${sent(c, "openai")} tokens`)).toEqual([]);
  expect(run.events.some((e) => e.type === "context" && e.action === "retried")).toBe(false);
}, 120_000);
