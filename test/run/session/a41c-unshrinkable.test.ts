// Attack on issue 41's context budget (attacker a41c; runner/run/session/context-budget.ts fit and
// #elide, runner/run/session/conversation.ts complete). Fixed (fix41-budget): #elide shortens the model's own long text and input strings at any
// depth (an input still long is replaced whole); a request still past the budget after compaction
// is not sent: RequestPastBudget (a ContextTooLong) names the brief and the parts in tokens.
// Doc promise: docs/models.md "Context windows": "Every request the runner sends fits its model's
// context window less the reply's reservation"; docs/loop.md: "Long string inputs of the agent's
// own earlier calls (a file it wrote) are shortened the same way".
// What happened, two ways past the window:
// 1. The model's own text is never shortened: only tool_result texts and the top-level strings of
//    tool_use inputs are (a nested input, `{"files": [{"text": ...}]}`, is not either). A reply of
//    long text (a model that pastes a log into its answer) stays in every later request. Under a
//    16k window (vLLM `--max-model-len 16384`, the default reservation of 8,192 kept: the budget is
//    8,192) a reply of about 7,900 tokens, within its `max_tokens`, makes the next request pass the
//    window; the forced retry has nothing to shorten, and the run ends ContextTooLong.
// 2. A brief that alone passes the budget (a SAM Context, skills, memory) is sent although the
//    runner's own estimate says it cannot fit: the provider refuses it and the run ends
//    ContextTooLong with the provider's words, which name no part of the task.
// Suggested fix: shorten long text blocks and nested input strings of the model's earlier replies
// like top-level inputs (the tape keeps them); before sending, if the estimate after compaction is
// still past the budget, end the pass without sending, naming what is too long (the brief's size,
// the budget, the entry's window) and what to do.
import { afterEach, expect, it } from "vitest";
import { closeAll, DONE, emits, scriptedPass } from "../../attack/a41c-pass.ts";

afterEach(closeAll);

/**
 * A reply a real model can give within its `max_tokens` (8,192 beside a 16k window, vLLM's
 * `--max-model-len 16384`): 31,500 characters of prose, about 7,900 tokens (10,500 as estimated): with
 * the system prompt, the tools and the brief, more than the budget.
 */
const PROSE = "The fit of bin 17 converged after the prior was widened; residuals follow. ".repeat(420);

it.each(["scripted", "scripted-openai"])(
  "a41c: a long text reply of the model is shortened, not sent past the window (%s)",
  async (scheme) => {
    const run = await scriptedPass(scheme, [
      "context_window: 16384",
      "work:",
      ...emits(2, 1000),
      `  - text: ${JSON.stringify(PROSE)}`,
      ...emits(2, 1000, (i) => `after-${i}`),
      DONE,
    ]);
    expect(run.error?.message).toBeUndefined();
    expect(run.result?.exit.type).toBe("done");
    expect(run.tape.filter((c) => c.error)).toEqual([]);
  },
);

it("a41c: a nested input of the model's own is shortened like a top-level one (scripted)", async () => {
  const big = JSON.stringify({ files: [{ path: "notes.md", text: PROSE }] });
  const run = await scriptedPass("scripted", [
    "context_window: 16384",
    "work:",
    ...emits(2, 1000),
    // The emit tool refuses the unknown key; the call stays in the history as the model sent it.
    `  - tool_calls: [{ name: emit, input: { chars: 10, tag: t, extra: ${big} } }]`,
    ...emits(2, 1000, (i) => `after-${i}`),
    DONE,
  ]);
  expect(run.error?.message).toBeUndefined();
  expect(run.result?.exit.type).toBe("done");
});

it("a41c: a brief past the budget is never sent; the error names the brief (scripted)", async () => {
  const run = await scriptedPass("scripted", ["context_window: 12000", "work:", DONE], {
    brief: `# Context\n\n${"A paragraph of the SAM's Context. ".repeat(900)}`,
  });
  expect(run.tape).toEqual([]);
  expect(run.error?.message).toMatch(/brief/);
});
