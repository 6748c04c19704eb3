// Plumbing every SDK-backed adapter shares: how the client is made, how one request is sent, and how
// SDK failures become ProviderErrors. Each vendor's wire format and quirks stay in its own adapter.
import { classifySdkError } from "../errors.ts";
import { ROLE_HEADER } from "../scripted/protocol.ts";
import type { ModelRequest } from "../types.ts";
import type { ProviderCallOptions } from "./provider.ts";

export interface SdkConnection {
  apiKey: string;
  baseURL?: string;
}

/** Client options: maxRetries 0, since the gateway's retries are the only ones, and each is recorded. */
export function sdkClientOptions(connection: SdkConnection) {
  return { apiKey: connection.apiKey, baseURL: connection.baseURL ?? null, maxRetries: 0 };
}

/**
 * Per-request options: the role header (the scripted model server picks its queue by it), the
 * attempt's timeout and abort signal, and again no SDK retries.
 */
export function sdkRequestOptions(request: ModelRequest, options: ProviderCallOptions) {
  return {
    headers: { [ROLE_HEADER]: request.role },
    timeout: options.timeoutMs,
    signal: options.signal ?? null,
    maxRetries: 0,
  };
}

/** Sends one SDK request; any failure comes back as a classified ProviderError. */
export async function sendSdkRequest<T>(providerName: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    throw classifySdkError(error, providerName);
  }
}

/**
 * How deep a tool call's input or a structured reply may nest. No schema of ours nests past a few
 * levels; a deeper value would overflow the stack of every recursive walk after it (freezing the
 * sent history, writing the tape, building the next request), which would crash the run instead
 * of failing the call (AE-9).
 */
export const MAX_REPLY_DEPTH = 64;

/**
 * A tool call's input as the agent may run it: an object nested at most MAX_REPLY_DEPTH
 * levels; anything else becomes `{ _unparsed_arguments }` saying why, which no tool's schema
 * accepts, so the tool layer answers the call with an error the agent reads.
 */
export function toolInputOf(value: unknown): Record<string, unknown> {
  if (nestsDeeperThan(value, MAX_REPLY_DEPTH))
    return {
      _unparsed_arguments: `(not run: the input nests more than ${MAX_REPLY_DEPTH} levels deep; send flat arguments)`,
    };
  return value && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : { value };
}

/** Whether objects and arrays nest more than `limit` levels in `value`. Iterative: any depth is safe. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [node, depth] = item;
    if (node === null || typeof node !== "object") continue;
    if (depth > limit) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}
