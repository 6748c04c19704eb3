// Records of the audit tape `runs/<runId>/audit.jsonl`: one JSON object a line, hash-chained.
// The audit module is a leaf: it does not import runner/llm. The content shapes below mirror
// runner/llm/types.ts structurally so a ModelRequest/ModelResponse can be written as-is.

/** Fields every line carries; written by AuditTape, checked by verifyTape. */
export interface ChainFields {
  /** 0-based position on the tape; a gap or a repeat means a line was deleted or moved. */
  seq: number;
  /** SHA-256 (hex) of the previous line's exact text; null on the first line. */
  prev: string | null;
  /** ISO time the record was written. */
  time: string;
  runId: string;
}

export type TapeContentBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature?: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; toolUseId: string; content: string; isError?: boolean };

export interface TapeUsage {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
  reasoning: number;
}

/** One failed attempt inside a call: a retry on the same model or a fallback to the next one. */
export interface TapeAttempt {
  provider: string;
  model: string;
  /** Name of the models-config entry tried. */
  entry: string;
  /** "retry": the same model is tried again; "fallback": the gateway moved on to another model. */
  outcome: "retry" | "fallback" | "fail";
  error: string;
  /** HTTP status when there was one. */
  status?: number;
  /** Why: rate_limit, server_error, timeout, connection, malformed, budget, auth, invalid_request, structured_output, script. */
  reason: string;
  /** Time waited before the next attempt (ms), honouring retry-after. */
  delayMs?: number;
  latencyMs: number;
}

/** The provider-neutral request as the agent built it (ModelRequest without its meta). */
export interface TapeRequest {
  kind: "control" | "work";
  rank: number;
  system: string;
  messages: { role: "user" | "assistant"; content: TapeContentBlock[] }[];
  tools?: { name: string; description: string; inputSchema: Record<string, unknown> }[];
  workspaceContext?: string;
  jsonSchema?: { name: string; schema: Record<string, unknown> };
  maxTokens?: number;
  /** The prompt tokens the runner kept this request under (the model's context window less its reply). */
  contextBudget?: number;
  /** The budget counted no thinking blocks: the wire drops them (Model.sendsThinking). */
  thinkingDropped?: true;
}

export interface TapeResponse {
  content: TapeContentBlock[];
  stopReason: string;
  json?: unknown;
}

/** One LLM call, written after it ends (successfully or not). */
export interface CallRecord extends ChainFields {
  kind: "call";
  role: string;
  iteration?: number;
  step?: number;
  sam?: { file: string; sha256: string };
  /** Provider and model that answered (or the last one tried when the call failed). */
  provider: string;
  model: string;
  entry: string;
  request: TapeRequest;
  /** The exact body sent over the wire (provider format, secrets redacted). */
  wire?: unknown;
  response?: TapeResponse;
  usage: TapeUsage;
  costUsd: number;
  /** Wall time of the whole call including retries (ms). */
  latencyMs: number;
  /** Failed attempts before the final one, in order. Empty when the first try answered. */
  attempts: TapeAttempt[];
  /** Set when the call failed in the end: the error the agent received. */
  error?: { name: string; message: string };
}

/** A memory or skill text that entered a prompt, by reference and hash. */
export interface InjectedRecord extends ChainFields {
  kind: "injected";
  /** Role of the agent whose prompt carried the text; the call record follows this one. */
  role: string;
  source: "memory" | "skill";
  ref: string;
  sha256: string;
  iteration?: number;
  step?: number;
}

/** The event closing a run's tape (data: outcome, reason); an export requires it (runner/export). */
export const RUN_END_EVENT = "run_end";

/** Free-form event: run start/end, model disabled for budget, notes from the loop. */
export interface EventRecord extends ChainFields {
  kind: "event";
  event: string;
  data?: Record<string, unknown>;
}

export type AuditRecord = CallRecord | InjectedRecord | EventRecord;

/**
 * A call record as it is stored on disk: `request.system` may be `{"$same": seq}`, and
 * `request.messages`, `request.tools` and any array member of `wire` may be
 * `{"$from": seq, "count": n, "add": [...]}` (see incremental.ts). readTape returns full CallRecords.
 */
export interface StoredCallRecord extends Omit<CallRecord, "request"> {
  request: Omit<TapeRequest, "system" | "messages" | "tools"> & {
    system: string | { $same: number };
    messages: TapeRequest["messages"] | { $from: number; count: number; add: unknown[] };
    tools?: TapeRequest["tools"] | { $from: number; count: number; add: unknown[] };
  };
}

/** A line of the tape as stored (call requests incremental). */
export type StoredRecord = StoredCallRecord | InjectedRecord | EventRecord;

/** What a writer hands to AuditTape.append: everything but the chain fields. */
export type AuditEntry =
  | Omit<CallRecord, keyof ChainFields>
  | Omit<InjectedRecord, keyof ChainFields>
  | Omit<EventRecord, keyof ChainFields>;

/**
 * The tape's head: the last record's seq and the SHA-256 of its line (the next record's `prev`).
 * Recorded outside the tape (state.json `auditHead`, history `audit`) so that a tape cut back or
 * re-chained as a whole no longer matches it.
 */
export interface AuditHead {
  seq: number;
  hash: string;
}

/** A head recorded outside the tape, and where (e.g. `state.json`, `history.jsonl:12`). */
export interface TapeAnchor extends AuditHead {
  source: string;
}

/**
 * Result of verifyTape. `line` is 1-based. `macs`: every line's MAC checked against the key,
 * or lines carry MACs but no key was given (absent: no MACs, no key). `anchors`: how many recorded heads
 * the tape was checked against, and the highest seq among them.
 */
export type VerifyResult =
  | {
      ok: true;
      records: number;
      macs?: "verified" | "unchecked";
      anchors?: { count: number; seq: number; sources: string[] };
    }
  | { ok: false; line: number; reason: string; records: number };
