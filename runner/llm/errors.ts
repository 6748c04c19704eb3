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
  | "not_found"
  | "invalid_request"
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
const MODEL_SPECIFIC: ReadonlySet<FailureReason> = new Set(["auth", "not_found"]);

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

/** Maps an HTTP status (and the scripted server's message prefix) to a reason. */
export function reasonForStatus(status: number, message: string): FailureReason {
  if (message.includes("scripted model")) return "script";
  if (status === 429) return "rate_limit";
  if (status === 408) return "timeout";
  if (status >= 500) return "server_error";
  if (status === 401 || status === 403) return "auth";
  if (status === 404) return "not_found";
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
  const message = `${provider}: ${apiMessage(e?.error) ?? e?.message ?? String(error)}`;
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
  }
  if (typeof e?.status === "number") {
    const headers = e.headers as { get?: (name: string) => string | null } | undefined;
    const retryAfter = parseRetryAfter(headers?.get?.("retry-after"));
    return new ProviderError(message, reasonForStatus(e.status, message), e.status, retryAfter);
  }
  if (error instanceof TypeError && /body|json|parse/i.test(error.message)) {
    return new ProviderError(`${provider}: malformed response (${error.message})`, "malformed");
  }
  return new ProviderError(message, "connection");
}

/** The human message inside an API error body: Anthropic `{error:{message}}`, OpenAI `{message}`. */
function apiMessage(body: unknown): string | undefined {
  const b = body as { message?: unknown; error?: { message?: unknown } } | undefined;
  const message = b?.error?.message ?? b?.message;
  return typeof message === "string" ? message : undefined;
}
