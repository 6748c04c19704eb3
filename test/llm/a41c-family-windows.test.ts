// Attack on issue 41's family defaults (attacker a41c; runner/llm/context-window.ts FAMILY_WINDOWS,
// docs/models.md "Context windows"). Fixed.
// Doc promise: docs/models.md: the window of a known model id without `contextWindow` is its
// family's default, so "Every request the runner sends fits its model's context window".
// What happened: a default larger than the model's real window is a budget the provider refuses:
// `o[134]*` gives 200,000, but o1-mini and o1-preview have 128,000; `gpt-5*` gives 400,000, but
// gpt-5-chat-latest and gpt-5.2-chat-latest (ChatGPT's GPT-5) have 128,000; and the 400,000 of the
// gpt-5 family is input and output together: its input is at most 272,000 tokens (128,000 are the
// output's: OpenAI's GPT-5 launch for developers), so a budget of 400,000 less 8,192 lets prompts
// of 272,000 to 391,808 go. Every long pass on those ids grows past the real limit and is refused
// once before its compacted retry (the budget is lowered for that pass only: the next pass starts
// at the family's number again). A default smaller than the
// real window only compacts early; a larger one is the failure the budget exists to prevent.
// Fixed: the exceptions come before their families in FAMILY_WINDOWS (o1-mini, o1-preview, gpt-5
// chat at 128,000), and a family may give an input limit (gpt-5*: 272,000) that caps the prompt's
// budget beside the window less the reply (promptBudget's third argument; create-model.ts).
import { expect, it } from "vitest";
import {
  DEFAULT_REPLY_TOKENS,
  familyInputLimit,
  familyWindow,
  promptBudget,
} from "../../runner/llm/context-window.ts";

it.each([
  ["o1-mini", 128_000],
  ["o1-mini-2024-09-12", 128_000],
  ["o1-preview", 128_000],
  ["gpt-5-chat-latest", 128_000],
  ["gpt-5.2-chat-latest", 128_000],
])("a41c: the family default for %s is at most its real window (%i)", (model, real) => {
  expect(familyWindow(model) ?? 0).toBeLessThanOrEqual(real);
});

it.each(["gpt-5", "gpt-5-mini", "gpt-5.1"])(
  "a41c: the prompt budget of %s is at most its input limit (272,000)",
  (model) => {
    expect(
      promptBudget(familyWindow(model) ?? 0, DEFAULT_REPLY_TOKENS, familyInputLimit(model)),
    ).toBeLessThanOrEqual(272_000);
  },
);

it("a41c: a family with no input limit keeps its window less the reply; the limit never raises a budget", () => {
  expect(promptBudget(200_000, DEFAULT_REPLY_TOKENS, familyInputLimit("claude-opus-4-5"))).toBe(
    200_000 - DEFAULT_REPLY_TOKENS,
  );
  expect(promptBudget(300_000, 128_000, familyInputLimit("gpt-5"))).toBe(172_000);
  expect(familyWindow("gpt-5-mini")).toBe(400_000);
  expect(familyWindow("o1")).toBe(200_000);
});
