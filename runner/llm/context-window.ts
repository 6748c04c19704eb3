// How many tokens a model's prompt may hold. The window comes from the models config
// (`contextWindow`), else from what an OpenAI-compatible server says of the model (vLLM's
// `/v1/models` gives `max_model_len`), else from a documented default for the model's family, else
// a conservative 32,768 (docs/models.md). The prompt's budget is the window less the reply's
// reservation (`max_tokens` as the provider sends it), so no request the runner sends can pass it.

/** What the providers send as `max_tokens` when neither the request nor the config sets it. */
export const DEFAULT_REPLY_TOKENS = 8192;

/** The window of a model whose family is unknown and whose server says nothing (a small local model's). */
export const UNKNOWN_WINDOW = 32_768;

/** Defaults per family (tokens), by model id; the first match wins. docs/models.md lists them. */
export const FAMILY_WINDOWS: readonly { family: RegExp; window: number }[] = [
  { family: /^claude-/i, window: 200_000 },
  { family: /^gpt-5/i, window: 400_000 },
  { family: /^gpt-4\.1/i, window: 1_047_576 },
  { family: /^gpt-4o/i, window: 128_000 },
  { family: /^o[134](-|$)/i, window: 200_000 },
];

export type WindowSource = "config" | "server" | "family" | "default";

/** The family default for a model id, or undefined. */
export function familyWindow(model: string): number | undefined {
  return FAMILY_WINDOWS.find((f) => f.family.test(model))?.window;
}

/**
 * The reply's reservation for a model: its `maxTokens` (default 8,192), unless that leaves the prompt
 * less than a quarter of the window (a vLLM at `--max-model-len 8192` with the default would leave
 * none, and every request would be refused): then a quarter of the window, with a warning saying
 * what to set instead.
 */
export function replyReservation(
  window: number,
  maxTokens: number | undefined,
  entry: string,
): { replyTokens: number; warning?: string } {
  const asked = maxTokens ?? DEFAULT_REPLY_TOKENS;
  if (window - asked >= window / 4) return { replyTokens: asked };
  const replyTokens = Math.max(1, Math.floor(window / 4));
  return {
    replyTokens,
    warning: `model '${entry}': its context window (${window} tokens) leaves a prompt only ${Math.max(0, window - asked)} tokens beside its reply reservation (maxTokens ${asked}${maxTokens === undefined ? ", the default" : ""}); the runner reserves ${replyTokens} tokens for replies instead. Set maxTokens (at most ${Math.floor(window / 2)}) on this model's entry in models.yaml, or give the server a larger window, to choose it yourself.`,
  };
}

/** The prompt tokens left beside the reply's reservation (never negative). */
export function promptBudget(window: number, replyTokens: number): number {
  return Math.max(0, window - replyTokens);
}

/**
 * What an OpenAI-compatible server says of a model's window: vLLM's `max_model_len`, or the
 * `context_length` / `context_window` other servers use, in `GET {baseURL}/models`. Undefined when
 * the server does not say, does not answer within `timeoutMs`, or answers something else.
 */
export async function serverWindow(
  baseURL: string,
  model: string,
  apiKey: string | undefined,
  timeoutMs = 3000,
): Promise<number | undefined> {
  try {
    const response = await fetch(`${baseURL.replace(/\/+$/, "")}/models`, {
      headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { data?: unknown };
    const list = Array.isArray(body.data) ? (body.data as Record<string, unknown>[]) : [];
    const entry = list.find((m) => m?.id === model) ?? (list.length === 1 ? list[0] : undefined);
    for (const key of ["max_model_len", "context_length", "context_window"]) {
      const value = entry?.[key];
      if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
    }
    return undefined;
  } catch {
    return undefined;
  }
}

/**
 * Tokens of a text, estimated from above: three bytes a token of the text as JSON carries it (fewer
 * than any tokenizer packs into English, code or JSON; control characters count as their escapes).
 * The same measure as a pass's ContextKeeper (runner/run/session/context-budget.ts).
 */
export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify(text), "utf8") / 3);
}

/** A single call's prompt tokens, estimated from above (system, messages, tools, schema). */
export function estimateRequest(request: {
  system: string;
  messages: readonly { content: readonly unknown[] }[];
  tools?: readonly unknown[] | undefined;
  jsonSchema?: unknown;
  workspaceContext?: string | undefined;
}): number {
  const messages = request.messages.reduce(
    (n, m) => n + 4 + m.content.reduce<number>((k, b) => k + blockTokens(b), 0),
    0,
  );
  return (
    estimateTokens(request.system) +
    estimateTokens(request.workspaceContext ?? "") +
    (request.tools?.length ? estimateTokens(JSON.stringify(request.tools)) : 0) +
    (request.jsonSchema !== undefined ? estimateTokens(JSON.stringify(request.jsonSchema)) : 0) +
    messages
  );
}

function blockTokens(block: unknown): number {
  const text = (block as { type?: unknown; text?: unknown }).text;
  return typeof text === "string" ? estimateTokens(text) + 4 : estimateTokens(JSON.stringify(block)) + 12;
}
