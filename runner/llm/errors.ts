// Provider failures, classified once by each adapter so the gateway can decide: retry the same
// model (transient), fall back to another model of the rank (model-specific), or fail the call.
import { ModelError } from "./types.ts";

export type FailureReason =
  | "rate_limit"
  | "server_error"
  | "timeout"
  | "connection"
  | "malformed"
  | "auth"
  | "billing"
  | "not_found"
  | "invalid_request"
  /** An invalid request because the prompt is past the model's context window. */
  | "context_length"
  | "script"
  | "aborted";

/** Reasons worth retrying on the same model (after a backoff). */
const TRANSIENT: ReadonlySet<FailureReason> = new Set([
  "rate_limit",
  "server_error",
  "timeout",
  "connection",
  "malformed",
]);
/** Reasons that condemn this model but not the request: try another model of the rank. */
const MODEL_SPECIFIC: ReadonlySet<FailureReason> = new Set(["auth", "billing", "not_found"]);

export class ProviderError extends ModelError {
  override name = "ProviderError";
  readonly reason: FailureReason;
  readonly status: number | undefined;
  /** From a `retry-after` header, in ms. */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, reason: FailureReason, status?: number, retryAfterMs?: number) {
    super(message);
    this.reason = reason;
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
  get transient(): boolean {
    return TRANSIENT.has(this.reason);
  }
  /** True when another model might succeed where this one failed. */
  get fallbackHelps(): boolean {
    return TRANSIENT.has(this.reason) || MODEL_SPECIFIC.has(this.reason);
  }
}

/**
 * The account cannot be served (no credit, a spend limit, a quota): an outage of that model, not a
 * refused request, though Anthropic answers it with a 400 `invalid_request_error` (SDK issue #618)
 * and OpenAI with a 429. Matched on the API's error type or code, or on the start of its message
 * (a context-window 400 never starts so), so no text of the run's own can make a refusal look so.
 */
const BILLING_MESSAGE =
  /^(your credit balance is too low|usage is blocked due to (insufficient|lack of) credits)/i;
const BILLING_CODES: ReadonlySet<string> = new Set(["billing_error", "insufficient_quota"]);

/**
 * A 400 for a prompt past the context window, in the words of the APIs (Anthropic, OpenAI, vLLM and
 * other OpenAI-compatible servers), matched on the code or the start of the API's own message. vLLM
 * words a prompt that fits but leaves no room for `max_tokens` (its tokenizer counted a little more
 * than the runner's estimate: the usual case) as "'max_tokens' or 'max_completion_tokens' is too
 * large: N. This model's maximum context length is ...", with the number 400 for its code.
 */
const CONTEXT_MESSAGE =
  /^(prompt is too long: \d+ tokens > \d+ maximum|input length and `max_tokens` exceed context limit|this model's maximum context length is \d+ tokens|'max_tokens' or 'max_completion_tokens' is too large: \d+\. this model's maximum context length is \d+ tokens)/i;

/** What the API's error body says of itself: its message, and its type or code. */
export interface ApiErrorBody {
  message?: string;
  type?: string;
  code?: string;
}

/** Maps an HTTP status (and the scripted server's message prefix, the API's body) to a reason. */
export function reasonForStatus(status: number, message: string, body: ApiErrorBody = {}): FailureReason {
  if (message.includes("scripted model")) return "script";
  if (
    status === 402 ||
    BILLING_CODES.has(body.type ?? "") ||
    BILLING_CODES.has(body.code ?? "") ||
    BILLING_MESSAGE.test(body.message ?? "")
  )
    return "billing";
  if (status === 429) return "rate_limit";
  if (status === 408) return "timeout";
  if (status >= 500) return "server_error";
  if (status === 401 || status === 403) return "auth";
  if (status === 404) return "not_found";
  if (body.code === "context_length_exceeded" || CONTEXT_MESSAGE.test(body.message ?? ""))
    return "context_length";
  return "invalid_request";
}

/** `retry-after` in seconds or as an HTTP date, to ms. */
export function parseRetryAfter(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * Turns an error thrown by the Anthropic or OpenAI SDK (both share the same error classes by name)
 * into a ProviderError. Bodies that are not JSON surface as SyntaxError from the SDK's parser.
 */
export function classifySdkError(error: unknown, provider: string): ProviderError {
  if (error instanceof ProviderError) return error;
  const e = error as {
    name?: string;
    status?: unknown;
    message?: string;
    headers?: unknown;
    error?: unknown;
  };
  const body = apiBody(e?.error);
  const message = `${provider}: ${body.message ?? e?.message ?? String(error)}`;
  // Class names, not `name` (the OpenAI SDK leaves `name` as "Error" on its subclasses).
  const kind = (error as object | null)?.constructor?.name ?? e?.name;
  switch (kind === "Error" ? e?.name : kind) {
    case "APIUserAbortError":
    case "AbortError":
      return new ProviderError(message, "aborted");
    case "APIConnectionTimeoutError":
      return new ProviderError(message, "timeout");
    case "APIConnectionError":
      return new ProviderError(message, "connection");
    case "SyntaxError":
      return new ProviderError(`${provider}: response body is not valid JSON (${e.message})`, "malformed");
    case "RangeError":
      // The request could not be built here (a body past what a string holds): the run's own
      // request, refused like a 400, never a connection that failed (which would read as an outage).
      return new ProviderError(`${provider}: the request could not be sent: ${e.message}`, "invalid_request");
  }
  if (typeof e?.status === "number") {
    const headers = e.headers as { get?: (name: string) => string | null } | undefined;
    const retryAfter = parseRetryAfter(headers?.get?.("retry-after"));
    return new ProviderError(message, reasonForStatus(e.status, message, body), e.status, retryAfter);
  }
  if (error instanceof TypeError && /body|json|parse/i.test(error.message)) {
    return new ProviderError(`${provider}: malformed response (${error.message})`, "malformed");
  }
  return new ProviderError(message, "connection");
}

/** An API error body's message, type and code: Anthropic `{error:{type,message}}`, OpenAI `{message,type,code}`. */
function apiBody(body: unknown): ApiErrorBody {
  const b = body as Record<string, unknown> | undefined;
  const inner = (typeof b?.error === "object" && b.error !== null ? b.error : b) as
    | Record<string, unknown>
    | undefined;
  const text = (value: unknown) => (typeof value === "string" ? value : undefined);
  const out: ApiErrorBody = {};
  const message = text(inner?.message) ?? text(b?.message);
  const type = text(inner?.type);
  const code = text(inner?.code) ?? text(b?.code);
  if (message !== undefined) out.message = message;
  if (type !== undefined) out.type = type;
  if (code !== undefined) out.code = code;
  return out;
}
