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
  /** Where the reply came from, when the server says (the scripted model's `scifi_script` field). */
  origin?: string;
}

/** The scripted model names the script line of each reply in a `scifi_script` field of the body. */
export function replyOrigin(reply: unknown): { origin?: string } {
  const origin = (reply as { scifi_script?: unknown } | undefined)?.scifi_script;
  return typeof origin === "string" ? { origin } : {};
}

export interface Provider {
  /** Provider name on the tape: anthropic, openai, scripted, replay. */
  readonly name: string;
  /** Model id sent to the API. */
  readonly model: string;
  call(request: ModelRequest, options: ProviderCallOptions): Promise<ProviderResult>;
  /** Whether requests of this kind and rank send thinking blocks back (Model.sendsThinking); absent: true. */
  sendsThinking?(kind: string, rank: number): boolean;
  close?(): Promise<void>;
}
