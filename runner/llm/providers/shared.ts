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
