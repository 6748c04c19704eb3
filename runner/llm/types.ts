// The provider-neutral model contract. Agents build ModelRequests; the gateway (runner/llm/gateway.ts)
// picks a model by kind and rank, calls a provider adapter (anthropic | openai | scripted | replay),
// and writes every call to the audit tape. Providers never see sandboxes; agents never see SDKs.

/** Control agents plan and judge (pre-scan, review); work agents act with tools. */
export type ModelKind = "control" | "work";

import { ENDING, type Ending, type EndsRun } from "../run-ending.ts";

/** Which agent role is calling: recorded on the tape and used by the scripted model's per-role queues. */
export type AgentRole =
  | "prescan"
  | "work"
  | "review"
  | "final_review"
  | "make_task"
  | "make_skill"
  | "ask"
  | "oracle"
  | "evolve"
  | "tracer"
  | "critique";

export interface ToolSpec {
  name: string;
  /** Model-facing description (from the tool's Markdown file). */
  description: string;
  /** JSON Schema of the tool input (an object schema). */
  inputSchema: Record<string, unknown>;
}

export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature?: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; toolUseId: string; content: string; isError?: boolean };

export interface Message {
  role: "user" | "assistant";
  content: ContentBlock[];
}

export interface CallMeta {
  runId: string;
  iteration?: number;
  step?: number;
  /** SAM path and hash, copied onto the tape. */
  sam?: { file: string; sha256: string };
}

export interface ModelRequest {
  role: AgentRole;
  kind: ModelKind;
  /** 1 = cheapest tier; the gateway picks a model of exactly this rank (falling back within the rank). */
  rank: number;
  /** Stable system prompt (cached). */
  system: string;
  /** Accumulated history (cached up to the last message before workspaceContext). */
  messages: Message[];
  tools?: ToolSpec[];
  /** Per-step workspace context (step, budgets left, recent errors): appended after the last cache breakpoint. */
  workspaceContext?: string;
  /** When set, the reply must be a JSON object matching this schema (structured output). */
  jsonSchema?: { name: string; schema: Record<string, unknown> };
  maxTokens?: number;
  /**
   * The prompt tokens this request was kept under (Model.contextBudget), recorded on the tape so a
   * replay compacts its history at the same points and sends the same requests.
   */
  contextBudget?: number;
  /**
   * Set when that budget counted no thinking blocks, as the wire drops them (Model.sendsThinking):
   * recorded so a replay counts the same.
   */
  thinkingDropped?: true;
  /**
   * Set by a tool-using pass (idScope: role, iteration, step): the reply's tool call ids get it
   * appended (scopeIds) before the gateway records the reply, so the tape holds the ids the history
   * uses and every id is unique in the run.
   */
  toolIdScope?: string;
  /** Texts injected into the prompt from memory or skills: recorded on the tape by reference and hash. */
  injected?: { kind: "memory" | "skill"; ref: string; sha256: string }[];
  meta: CallMeta;
}

export interface Usage {
  /** Uncached input tokens. */
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
  /** Reasoning tokens (part of output where the provider counts them so). */
  reasoning: number;
}

export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "refusal" | "other";

export interface ModelResponse {
  content: ContentBlock[];
  stopReason: StopReason;
  usage: Usage;
  provider: string;
  model: string;
  costUsd: number;
  latencyMs: number;
  /** Parsed JSON when the request asked for structured output and the reply parsed. */
  json?: unknown;
  /** Where the reply came from, when the server says (the scripted model: `demo.yaml:3`). */
  origin?: string;
  /** The call's record on the audit tape (a pass then knows its request's tool outputs are there). */
  seq?: number;
}

/** What agents hold: one call, one answer, everything else (ranks, retries, audit) behind it. */
export interface Model {
  complete(request: ModelRequest, signal?: AbortSignal): Promise<ModelResponse>;
  /**
   * Set by a replay: when the recorded run started (ISO). Shared memory (group, global) written at
   * or after it is not read, so the replay's prompts see memory as the recorded run's did.
   */
  readonly memoryAsOf?: string;
  /**
   * The roles this model answers at all; absent: every role. A scripted script answers the roles it
   * has replies for, a replay the roles its tape recorded: a run asks an optional agent (the
   * critique's tracer) only when it can answer, so an older script or tape runs as before.
   */
  readonly roles?: ReadonlySet<string>;
  /**
   * The prompt tokens (system, tools, messages) a request of this kind and rank may hold: the
   * smallest context window among the models that may answer it, less their reply's reservation.
   * Undefined: no window is known (the scripted model without `context_window`).
   */
  contextBudget?(kind: ModelKind, rank: number): number | undefined;
  /**
   * Whether a request of this kind and rank sends the model's reasoning (thinking blocks) back:
   * false only when every model that may answer drops it (Chat Completions has no field for it),
   * so the context budget counts what the wire sends. Absent: true.
   */
  sendsThinking?(kind: ModelKind, rank: number): boolean;
  /**
   * A replay: the recorded run's `scifi ctl` limit changes due before the next call, each returned
   * once (runner/llm/replay-control.ts); the session applies them before it builds the request.
   */
  replayedControl?(): readonly import("./replay-control.ts").ReplayedChange[];
  /**
   * Puts a tool output on the audit tape as a `tool_output` event (redacted like a call) and returns
   * its record: for an output the runner elides before any request carried it, which would else be
   * on no record. Absent: the model keeps no tape.
   */
  recordOutput?(output: ToolOutputRecord): number;
}

/** A tool output recorded on its own (Model.recordOutput): the call id names it in placeholders. */
export interface ToolOutputRecord {
  role: AgentRole;
  /** The tool call's id (tool_use id) whose result this is. */
  callId: string;
  text: string;
  iteration?: number;
  /** The pass's step that made the tool call (the step before the request that elided it). */
  step?: number;
}

export class ModelError extends Error {
  override name = "ModelError";
}

/** No model of the requested kind and rank is left (all failed or out of budget). */
export class NoModelAvailable extends ModelError implements EndsRun {
  override name = "NoModelAvailable";
  readonly [ENDING]: Ending = { status: "failed", limit: "model", prefix: "no model" };
}

/**
 * Every model of the rank was asked and none answered (server errors, timeouts, refused keys, a
 * retry-after past the run's wall time): an outage, not the task's failure, so `scifi eval` counts
 * the trial as an error that `--retry-errors` runs again. A rank with no model configured, or whose
 * models' budgets are spent, stays NoModelAvailable: asking again later would end the same way.
 */
export class ModelsUnreachable extends NoModelAvailable {
  override name = "ModelsUnreachable";
  override readonly [ENDING]: Ending = {
    status: "failed",
    limit: "model",
    prefix: "no model",
    cause: "model",
  };
}

/**
 * The provider refused the request itself as invalid (HTTP 400, e.g. a prompt past the model's
 * context window, which a pass's long tool outputs lead to): no other model of the rank is asked
 * (the same request fails there too) and the run ends failed, never without an outcome, so a run
 * that grew its own context past the window is judged, not an infrastructure error (AE-8b).
 */
export class RequestRefused extends ModelError implements EndsRun {
  override name = "RequestRefused";
  readonly [ENDING]: Ending = { status: "failed", limit: "model", prefix: "model refused the request" };
}

/**
 * The provider refused the request as longer than the model's context window (Anthropic's "prompt
 * is too long", OpenAI's `context_length_exceeded`, vLLM's "maximum context length"): the caller
 * may compact its history and send it again once (runner/run/session/conversation.ts).
 */
export class ContextTooLong extends RequestRefused {
  override name = "ContextTooLong";
}

/** The run's money or token budget is spent. */
export class BudgetExceeded extends ModelError implements EndsRun {
  override name = "BudgetExceeded";
  readonly [ENDING]: Ending = { status: "failed", limit: "budget", prefix: "budget" };
}

/**
 * The reply to a structured-output request was not JSON matching the schema. The agent layer may
 * retry (e.g. with the error text appended); `raw` is the reply text as received.
 */
export class StructuredOutputError extends ModelError {
  override name = "StructuredOutputError";
  readonly raw: string;
  /** The call as made (tokens, cost, the reply's origin): it was paid for even though it did not fit. */
  response: ModelResponse | undefined;
  constructor(message: string, raw: string) {
    super(message);
    this.raw = raw;
  }
}
