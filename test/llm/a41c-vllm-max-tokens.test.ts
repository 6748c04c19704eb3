// Attack on issue 41's refusal-for-length retry (attacker a41c; runner/llm/errors.ts CONTEXT_MESSAGE,
// reasonForStatus). Fixed.
// Doc promise: docs/models.md "Context windows": a provider that still refuses a request as too long
// ("... vLLM's 'This model's maximum context length is N tokens', matched on the API's code or the
// start of its message") gets one compacted retry, recorded; issue 41 names the cluster user's vLLM.
// What happened: vLLM words the refusal for a prompt that fits but leaves no room for `max_tokens`
// (the common case: the runner reserves `max_tokens` beside a prompt it estimated just under the
// budget, and the server's tokenizer counts a little more) as
//   400 {"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's
//   maximum context length is 32768 tokens and your request has 24700 input tokens (8192 > 32768 -
//   24700).","type":"BadRequestError","param":null,"code":400}}
// Its message does not start with any of the matched texts and its code is the number 400, so the
// runner takes it as an invalid request (RequestRefused, "A prompt past the model's context window
// is the usual cause"), never compacts, never retries: the night ends at that call.
// Fixed: CONTEXT_MESSAGE matches vLLM's "'max_tokens' or 'max_completion_tokens' is too large: N. This
// model's maximum context length is" too (docs/models.md says so).
import { afterEach, expect, it } from "vitest";
import { reasonForStatus } from "../../runner/llm/errors.ts";
import { closeAll, DONE, emits, scriptedPass } from "../attack/a41c-pass.ts";

afterEach(closeAll);

const VLLM =
  "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is 32768 tokens and your request has 24700 input tokens (8192 > 32768 - 24700).";

it("a41c: vLLM's refusal for prompt + max_tokens is a refusal for length", () => {
  expect(reasonForStatus(400, VLLM, { message: VLLM, type: "BadRequestError", code: "400" })).toBe(
    "context_length",
  );
  // Newer vLLM adds the parameter it names.
  const newer = `${VLLM.slice(0, -1)}. (parameter=max_tokens, value=8192)`;
  expect(reasonForStatus(400, newer, { message: newer, type: "BadRequestError" })).toBe("context_length");
});

it("a41c: a pass that meets vLLM's words is compacted and sent again once, not ended (scripted)", async () => {
  const run = await scriptedPass("scripted-openai", [
    "context_window: 40000",
    "work:",
    ...emits(4, 3000),
    // The server's tokenizer counted more than the runner's estimate: vLLM's own 400.
    `  - { status: 400, message: ${JSON.stringify(VLLM)} }`,
    DONE,
  ]);
  expect(run.error?.message).toBeUndefined();
  expect(run.result?.exit.type).toBe("done");
  expect(run.events.filter((e) => e.type === "context" && e.action === "retried")).toHaveLength(1);
  expect(run.tape.filter((c) => c.error).map((c) => c.error?.name)).toEqual(["ContextTooLong"]);
});
