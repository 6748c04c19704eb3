// How many tokens a model's prompt may hold. The window comes from the models config
// (`contextWindow`), else from what an OpenAI-compatible server says of the model (vLLM's
// `/v1/models` gives `max_model_len`), else from a documented default for the model's family, else
// a conservative 32,768 (docs/models.md). The prompt's budget is the window less the reply's
// reservation (`max_tokens` as the provider sends it), so no request the runner sends can pass it.

/** What the providers send as `max_tokens` when neither the request nor the config sets it. */
export const DEFAULT_REPLY_TOKENS = 8192;

/** The window of a model whose family is unknown and whose server says nothing (a small local model's). */
export const UNKNOWN_WINDOW = 32_768;

/**
 * Defaults per family (tokens), by model id; the first match wins, so the exceptions (smaller
 * windows inside a family) come first. `inputLimit`: where the provider caps the prompt below the
 * window less the reply (GPT-5's 400,000 counts input and output; its input is at most 272,000). A
 * default past the real window is the refusal the budget exists to prevent; one below only compacts
 * early. docs/models.md lists them.
 */
export const FAMILY_WINDOWS: readonly { family: RegExp; window: number; inputLimit?: number }[] = [
  { family: /^claude-/i, window: 200_000 },
  { family: /^gpt-5(\.\d+)?-chat/i, window: 128_000 },
  { family: /^gpt-5/i, window: 400_000, inputLimit: 272_000 },
  { family: /^gpt-4\.1/i, window: 1_047_576 },
  { family: /^gpt-4o/i, window: 128_000 },
  { family: /^o1-(mini|preview)/i, window: 128_000 },
  { family: /^o[134](-|$)/i, window: 200_000 },
];

export type WindowSource = "config" | "server" | "family" | "default";

/** The family default for a model id, or undefined. */
export function familyWindow(model: string): number | undefined {
  return FAMILY_WINDOWS.find((f) => f.family.test(model))?.window;
}

/** The family's cap on the prompt itself, where it has one below its window (undefined: none). */
export function familyInputLimit(model: string): number | undefined {
  return FAMILY_WINDOWS.find((f) => f.family.test(model))?.inputLimit;
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

/** The prompt tokens left beside the reply's reservation, at most the input limit (never negative). */
export function promptBudget(window: number, replyTokens: number, inputLimit?: number): number {
  return Math.max(0, Math.min(window - replyTokens, inputLimit ?? Number.POSITIVE_INFINITY));
}

/**
 * What an OpenAI-compatible server says of a model's window: vLLM's `max_model_len`, or the
 * `context_length` / `context_window` other servers use, in `GET {baseURL}/models`. Undefined when
 * the server does not say, does not answer within `timeoutMs`, or answers something else.
 */
/**
 * The most of a `/models` answer read: a listing is kilobytes (OpenRouter's, the largest known, a
 * few MB). A server, a proxy or a wrong baseURL that streams without end is given up past it, as on
 * a timeout, rather than held in memory (trust rule 4: no unbounded reads).
 */
export const MODELS_ANSWER_MAX_BYTES = 8 * 1024 * 1024;

/** A body's text, or a throw once it passes `max` bytes (the stream cancelled there). */
async function cappedText(body: ReadableStream<Uint8Array>, max: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new Error(`the answer passed ${max} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

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
    if (!response.ok || !response.body) return undefined;
    const body = JSON.parse(await cappedText(response.body, MODELS_ANSWER_MAX_BYTES)) as { data?: unknown };
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
