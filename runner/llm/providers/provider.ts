// What every provider adapter implements: one request in the neutral format, one answer back,
// failures as ProviderError. Adapters do not retry (the gateway does) and do not write the tape.
import type { ContentBlock, ModelRequest, StopReason, Usage } from "../types.ts";

export interface ProviderCallOptions {
  signal?: AbortSignal;
  /** Per-attempt timeout (ms); a timeout is a transient ProviderError. */
  timeoutMs: number;
}

export interface ProviderResult {
  content: ContentBlock[];
  stopReason: StopReason;
  usage: Usage;
  /** The exact request body sent (for the tape). */
  wire: unknown;
  /** What the call cost when the provider knows it (a replay: the recorded cost); else from the prices. */
  costUsd?: number;
}

export interface Provider {
  /** Provider name on the tape: anthropic, openai, scripted, replay. */
  readonly name: string;
  /** Model id sent to the API. */
  readonly model: string;
  call(request: ModelRequest, options: ProviderCallOptions): Promise<ProviderResult>;
  close?(): Promise<void>;
}
