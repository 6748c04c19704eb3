// The scripted model's context window (`context_window:` in a script): a request past it gets the
// HTTP 400 the real providers send, word for word in their shape, so a test sees what a real night
// sees. Anthropic refuses a prompt past the window ("prompt is too long: N tokens > M maximum") and
// a prompt whose `max_tokens` would not fit beside it; OpenAI (and vLLM behind its API) answers
// `context_length_exceeded` for either. Tokens are counted as the scripted usage counts them.
import { promptTokens } from "../../audit/prefix-cache.ts";

type Json = Record<string, unknown>;

export interface WindowRefusal {
  status: 400;
  body: string;
}

/** The refusal for a request past `window` tokens, or undefined when it fits. */
export function windowRefusal(
  format: "anthropic" | "openai",
  body: Json,
  window: number,
): WindowRefusal | undefined {
  const prompt = promptTokens(format, body);
  const reply = replyTokens(body);
  if (prompt <= window && prompt + reply <= window) return undefined;
  if (format === "anthropic") {
    const message =
      prompt > window
        ? `prompt is too long: ${prompt} tokens > ${window} maximum`
        : `input length and \`max_tokens\` exceed context limit: ${prompt} + ${reply} > ${window}, decrease input length or \`max_tokens\` and try again`;
    return {
      status: 400,
      body: JSON.stringify({
        type: "error",
        error: { type: "invalid_request_error", message },
        request_id: "req_scripted_context_window",
      }),
    };
  }
  const message =
    reply > 0
      ? `This model's maximum context length is ${window} tokens. However, you requested ${prompt + reply} tokens (${prompt} in the messages, ${reply} in the completion). Please reduce the length of the messages or completion.`
      : `This model's maximum context length is ${window} tokens. However, your messages resulted in ${prompt} tokens. Please reduce the length of the messages.`;
  return {
    status: 400,
    body: JSON.stringify({
      error: { message, type: "invalid_request_error", param: "messages", code: "context_length_exceeded" },
    }),
  };
}

/** The reply's reservation the request asks for (Anthropic `max_tokens`; OpenAI either name). */
function replyTokens(body: Json): number {
  for (const key of ["max_tokens", "max_completion_tokens"]) {
    const value = body[key];
    if (typeof value === "number" && Number.isFinite(value) && value > 0) return value;
  }
  return 0;
}
