// The LLM gateway: the one Model every agent holds. It picks a model of the requested kind and
// rank (round-robin among equals), retries transient failures with exponential backoff + jitter
// honouring retry-after, falls back to another model of the same rank, enforces per-model and
// per-run budgets, and writes one audit record per call (attempts, usage, cost, errors included).
// (Just over 500 lines: one class whose call path, candidates -> try -> succeed or fail -> charge,
// reads top to bottom in one place; what it charges lives in purse.ts.)
import { existsSync } from "node:fs";
import type { AuditTape } from "../audit/tape.ts";
import type { TapeAttempt } from "../audit/types.ts";
import { readTape } from "../audit/verify.ts";
import { freezeDeep } from "../frozen.ts";
import { costUsd, type Prices } from "./config.ts";
import { ProviderError } from "./errors.ts";
import type { Provider, ProviderResult } from "./providers/provider.ts";
import { parseStructured } from "./providers/structured.ts";
import { Purse } from "./purse.ts";
import { ScriptError } from "./scripted/script.ts";
import { tapeRequest } from "./tape-request.ts";
import { scopeIds, usedToolIds } from "./tool-ids.ts";
import {
  BudgetExceeded,
  ContextTooLong,
  type Model,
  type ModelKind,
  type ModelRequest,
  type ModelResponse,
  ModelsUnreachable,
  NoModelAvailable,
  RequestRefused,
  StructuredOutputError,
  type ToolOutputRecord,
  type Usage,
} from "./types.ts";

export interface GatewayEntry {
  /** Unique name (from the models config). */
  name: string;
  provider: Provider;
  /** "any" serves every rank (scripted and replay models). */
  rank: number | "any";
  kinds: ModelKind[];
  prices: Prices;
  budgetUsd?: number;
  /**
   * Prompt tokens a request may hold for this model (its context window less the reply's
   * reservation), per kind and rank; undefined: no window known.
   */
  contextBudget?: (kind: ModelKind, rank: number) => number | undefined;
}

export interface RetryOptions {
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  timeoutMs: number;
  /** How long a model that failed after its retries is passed over (ms). */
  cooldownMs: number;
}

export interface GatewayOptions {
  audit: AuditTape;
  retry?: Partial<RetryOptions>;
  /** The run's budget; `spent` is what earlier processes of the run spent (a resume continues it). */
  budget?: { usd?: number; tokens?: number; spent?: { usd: number; tokens: number } };
  /** The run's purse (runner/llm/purse.ts), shared with the run's budget check; wins over `budget`. */
  purse?: Purse;
  /** Jitter source (tests pin it). */
  random?: () => number;
  /** Called on close (stops a scripted server). */
  onClose?: () => Promise<void>;
  /**
   * The run's wall-time deadline (ms since the epoch, `Date.now()` scale). A retry-after longer
   * than `maxDelayMs` is waited for only when it ends before this; without it, it is waited for.
   * A function is asked each time (the run's clock: a walltime changed mid-run moves it).
   */
  deadline?: number | (() => number);
  /** Told what the gateway waits for (a long retry-after), and `undefined` when the wait is over. */
  onNotice?: (notice: string | undefined) => void;
  /** Sleep and clock (tests scale time). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  /** See Model.memoryAsOf (a replay). */
  memoryAsOf?: string;
  /** See Model.replayedControl (a replay). */
  replayedControl?: Model["replayedControl"];
  /** See Model.roles (a scripted model, a replay). */
  roles?: ReadonlySet<string>;
}

const DEFAULT_RETRY: RetryOptions = {
  maxRetries: 4,
  baseDelayMs: 1000,
  maxDelayMs: 60_000,
  timeoutMs: 600_000,
  cooldownMs: 60_000,
};

interface EntryState {
  spentUsd: number;
  disabled: boolean;
  unhealthyUntil: number;
}

/** Totals the gateway has spent in this run. */
export interface Spent {
  usd: number;
  tokens: number;
  calls: number;
}

export class Gateway implements Model {
  readonly entries: readonly GatewayEntry[];
  readonly memoryAsOf: string | undefined;
  readonly replayedControl?: Model["replayedControl"];
  readonly roles: ReadonlySet<string> | undefined;
  readonly #audit: AuditTape;
  #usedIds: Set<string> | undefined;
  readonly #retry: RetryOptions;
  /** The run's one count of spend and its caps (shared with the run when it hands one in). */
  readonly #purse: Purse;
  readonly #random: () => number;
  readonly #onClose: (() => Promise<void>) | undefined;
  readonly #deadline: number | (() => number) | undefined;
  readonly #onNotice: ((notice: string | undefined) => void) | undefined;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #now: () => number;
  readonly #state = new Map<string, EntryState>();
  readonly #roundRobin = new Map<string, number>();
  #calls = 0;

  constructor(entries: GatewayEntry[], options: GatewayOptions) {
    if (entries.length === 0) throw new NoModelAvailable("the gateway has no models configured");
    this.entries = entries;
    this.#audit = options.audit;
    this.#retry = { ...DEFAULT_RETRY, ...options.retry };
    const { spent, ...caps } = options.budget ?? {};
    this.#purse = options.purse ?? new Purse(caps, spent);
    this.#purse.chargedByGateway = true;
    this.#random = options.random ?? Math.random;
    this.#onClose = options.onClose;
    this.#deadline = options.deadline;
    this.memoryAsOf = options.memoryAsOf;
    if (options.replayedControl) this.replayedControl = options.replayedControl;
    this.roles = options.roles;
    this.#onNotice = options.onNotice;
    this.#sleep = options.sleep ?? sleep;
    this.#now = options.now ?? Date.now;
    for (const entry of entries)
      this.#state.set(entry.name, { spentUsd: 0, disabled: false, unhealthyUntil: 0 });
  }

  get spent(): Readonly<Spent> {
    return { usd: this.#purse.usd, tokens: this.#purse.tokens, calls: this.#calls };
  }

  /** The run's wall-time deadline as the gateway sees it now (ms since the epoch), if it has one. */
  deadlineAt(): number | undefined {
    return typeof this.#deadline === "function" ? this.#deadline() : this.#deadline;
  }

  get audit(): AuditTape {
    return this.#audit;
  }

  /** See Model.recordOutput: an output elided before any request carried it goes on the tape. */
  recordOutput(output: ToolOutputRecord): number {
    const { role, callId, text, iteration, step } = output;
    return this.#audit.append({
      kind: "event",
      event: "tool_output",
      data: {
        role,
        callId,
        ...(iteration !== undefined ? { iteration } : {}),
        ...(step !== undefined ? { step } : {}),
        chars: text.length,
        text,
      },
    });
  }

  /** The smallest budget among the models that may answer (Model.contextBudget). */
  contextBudget(kind: ModelKind, rank: number): number | undefined {
    const budgets = this.entries
      .filter((e) => e.kinds.includes(kind) && (e.rank === "any" || e.rank === rank))
      .map((e) => e.contextBudget?.(kind, rank))
      .filter((b): b is number => b !== undefined);
    return budgets.length > 0 ? Math.min(...budgets) : undefined;
  }

  /** True unless every model that may answer drops thinking blocks (Model.sendsThinking). */
  sendsThinking(kind: ModelKind, rank: number): boolean {
    return this.entries
      .filter((e) => e.kinds.includes(kind) && (e.rank === "any" || e.rank === rank))
      .some((e) => e.provider.sendsThinking?.(kind, rank) ?? true);
  }

  async complete(request: ModelRequest, signal?: AbortSignal): Promise<ModelResponse> {
    const started = performance.now();
    const attempts: TapeAttempt[] = [];
    freezeSent(request);
    this.#checkRunBudget(request);
    this.#recordInjected(request);
    let candidates: GatewayEntry[];
    try {
      candidates = this.#candidates(request, attempts);
    } catch (error) {
      return this.#fail(undefined, request, attempts, started, error as Error);
    }
    let last: GatewayEntry | undefined;
    const whys: string[] = [];
    for (const [index, entry] of candidates.entries()) {
      last = entry;
      const isLast = index === candidates.length - 1;
      const outcome = await this.#tryEntry(entry, request, attempts, isLast, signal);
      if (outcome.kind === "ok") return this.#succeed(entry, request, outcome.result, attempts, started);
      if (outcome.kind === "fatal")
        this.#fail(entry, request, attempts, started, refusal(entry, outcome.error), outcome.result);
      if (outcome.why) whys.push(`${entry.name}: ${outcome.why}`);
    }
    if (whys.length > 0) {
      const error = new ModelsUnreachable(
        `no ${request.kind} model of rank ${request.rank} could answer: ${whys.join("; ")}`,
      );
      return this.#fail(last, request, attempts, started, error);
    }
    const tried = attempts
      .filter((a) => a.outcome !== "retry")
      .map((a) => `${a.entry}: ${a.reason}`)
      .join(", ");
    // A model that was asked and failed makes it an outage; budgets spent alone do not.
    const Unanswered = attempts.some((a) => a.reason !== "budget") ? ModelsUnreachable : NoModelAvailable;
    const error = new Unanswered(
      `no ${request.kind} model of rank ${request.rank} could answer${tried ? ` (tried ${tried})` : ""}; check the models config ranks, keys and budgets`,
    );
    return this.#fail(last, request, attempts, started, error);
  }

  async close(): Promise<void> {
    await this.#onClose?.();
    await Promise.all(this.entries.map((e) => e.provider.close?.()));
  }

  /** Models of the kind and rank, rotated for round-robin, over-budget ones removed, sick ones last. */
  #candidates(request: ModelRequest, attempts: TapeAttempt[]): GatewayEntry[] {
    const matching = this.entries.filter(
      (e) => e.kinds.includes(request.kind) && (e.rank === "any" || e.rank === request.rank),
    );
    if (matching.length === 0) {
      const available = this.entries
        .map((e) => `${e.name} (rank ${e.rank}, ${e.kinds.join("/")})`)
        .join(", ");
      throw new NoModelAvailable(
        `no model is configured for kind '${request.kind}' at rank ${request.rank}; configured: ${available}`,
      );
    }
    const key = `${request.kind}:${request.rank}`;
    const turn = this.#roundRobin.get(key) ?? 0;
    this.#roundRobin.set(key, turn + 1);
    const rotated = matching.map((_, i) => matching[(turn + i) % matching.length] as GatewayEntry);
    const usable = rotated.filter((entry) => {
      const state = this.#stateOf(entry);
      if (!state.disabled) return true;
      attempts.push(
        attempt(entry, "fallback", "budget", `model budget of ${entry.budgetUsd} USD is spent`, 0),
      );
      return false;
    });
    const now = this.#now();
    const healthy = usable.filter((e) => this.#stateOf(e).unhealthyUntil <= now);
    return [...healthy, ...usable.filter((e) => this.#stateOf(e).unhealthyUntil > now)];
  }

  async #tryEntry(
    entry: GatewayEntry,
    request: ModelRequest,
    attempts: TapeAttempt[],
    isLast: boolean,
    signal: AbortSignal | undefined,
  ): Promise<
    | { kind: "ok"; result: ProviderResult }
    | { kind: "fatal"; error: Error; result?: ProviderResult }
    | { kind: "fallback"; why?: string }
  > {
    for (let retry = 0; ; retry++) {
      const t0 = performance.now();
      let result: ProviderResult | undefined;
      try {
        result = await entry.provider.call(request, { signal, timeoutMs: this.#retry.timeoutMs });
        return { kind: "ok", result };
      } catch (caught) {
        // Anything but a classified provider failure (e.g. a replay divergence) ends the call as is.
        if (!(caught instanceof ProviderError)) return { kind: "fatal", error: asError(caught) };
        const error = caught;
        const latencyMs = performance.now() - t0;
        if (error.reason === "script") return { kind: "fatal", error: new ScriptError(error.message) };
        if (error.reason === "aborted" || !error.fallbackHelps) return { kind: "fatal", error };
        const delayMs = this.#delay(retry, error.retryAfterMs);
        const retryable = error.transient && retry < this.#retry.maxRetries;
        if (retryable && delayMs <= this.#retry.maxDelayMs) {
          attempts.push(
            attempt(entry, "retry", error.reason, error.message, latencyMs, error.status, delayMs),
          );
          await this.#sleep(delayMs, signal);
          continue;
        }
        // A retry-after above maxDelayMs: another model of the rank answers at once when there is
        // one; otherwise the wait is honoured when the run's wall time allows it.
        const long = retryable && error.retryAfterMs !== undefined ? delayMs : undefined;
        const asked = long !== undefined ? askedFor(long, error.status) : undefined;
        if (long !== undefined && isLast) {
          const deadline = this.deadlineAt();
          const left = deadline !== undefined ? deadline - this.#now() : undefined;
          if (left === undefined || long <= left) {
            attempts.push(
              attempt(entry, "retry", error.reason, error.message, latencyMs, error.status, long),
            );
            this.#audit.append({
              kind: "event",
              event: "retry_wait",
              data: { entry: entry.name, delayMs: long, status: error.status ?? null, reason: error.reason },
            });
            this.#onNotice?.(`waiting ${seconds(long)} s: ${asked}`);
            try {
              await this.#sleep(long, signal);
            } finally {
              this.#onNotice?.(undefined);
            }
            continue;
          }
          const why = `${asked}, more than the ${seconds(Math.max(0, left))} s of wall time the run has left`;
          attempts.push(
            attempt(entry, "fail", error.reason, `${why}: ${error.message}`, latencyMs, error.status),
          );
          this.#stateOf(entry).unhealthyUntil = this.#now() + long;
          return { kind: "fallback", why };
        }
        attempts.push(
          attempt(
            entry,
            isLast ? "fail" : "fallback",
            error.reason,
            asked ? `${asked}; falling back at once: ${error.message}` : error.message,
            latencyMs,
            error.status,
          ),
        );
        this.#stateOf(entry).unhealthyUntil = this.#now() + Math.max(this.#retry.cooldownMs, long ?? 0);
        return { kind: "fallback" };
      }
    }
  }

  /** Exponential backoff with jitter (50-100 % of the step); a retry-after from the server wins. */
  #delay(retry: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) return retryAfterMs;
    const step = Math.min(this.#retry.maxDelayMs, this.#retry.baseDelayMs * 2 ** retry);
    return Math.round(step * (0.5 + 0.5 * this.#random()));
  }

  #succeed(
    entry: GatewayEntry,
    request: ModelRequest,
    result: ProviderResult,
    attempts: TapeAttempt[],
    started: number,
  ): ModelResponse {
    // The ids the pass's history will use, on the tape too (a41e): a call pairs with its result.
    const content = scopeIds(result.content, request.toolIdScope ?? request.role, this.#toolIds());
    const cost = result.costUsd ?? costUsd(entry.prices, result.usage);
    this.#charge(entry, result.usage, cost);
    let json: unknown;
    let structuredError: StructuredOutputError | undefined;
    if (request.jsonSchema) {
      try {
        json = parseStructured(content, request.jsonSchema.schema);
      } catch (error) {
        if (!(error instanceof StructuredOutputError)) throw error;
        structuredError = error;
      }
    }
    const latencyMs = Math.round(performance.now() - started);
    const seq = this.#audit.append({
      ...this.#callBase(entry, request),
      wire: result.wire,
      response: {
        content,
        stopReason: result.stopReason,
        ...(json !== undefined ? { json } : {}),
      },
      usage: result.usage,
      costUsd: cost,
      latencyMs,
      attempts,
      ...(structuredError ? { error: { name: structuredError.name, message: structuredError.message } } : {}),
    });
    const response: ModelResponse = {
      content,
      stopReason: result.stopReason,
      usage: result.usage,
      provider: entry.provider.name,
      model: entry.provider.model,
      costUsd: cost,
      latencyMs,
      ...(json !== undefined ? { json } : {}),
      ...(result.origin ? { origin: result.origin } : {}),
      seq,
    };
    if (structuredError) {
      // The call was made and paid for: the caller accounts it like any other.
      structuredError.response = response;
      throw structuredError;
    }
    return response;
  }

  #fail(
    entry: GatewayEntry | undefined,
    request: ModelRequest,
    attempts: TapeAttempt[],
    started: number,
    error: Error,
    result?: ProviderResult,
  ): never {
    this.#audit.append({
      ...this.#callBase(entry, request),
      ...(result ? { wire: result.wire } : {}),
      usage: zeroUsage(),
      costUsd: 0,
      latencyMs: Math.round(performance.now() - started),
      attempts,
      error: { name: error.name, message: error.message },
    });
    throw error;
  }

  #callBase(entry: GatewayEntry | undefined, request: ModelRequest) {
    return {
      kind: "call" as const,
      role: request.role,
      ...(request.meta.iteration !== undefined ? { iteration: request.meta.iteration } : {}),
      ...(request.meta.step !== undefined ? { step: request.meta.step } : {}),
      ...(request.meta.sam ? { sam: request.meta.sam } : {}),
      provider: entry?.provider.name ?? "none",
      model: entry?.provider.model ?? "none",
      entry: entry?.name ?? "none",
      request: tapeRequest(request),
    };
  }

  /**
   * The tool call ids the run has used, read once from the tape (a resumed run's earlier processes
   * wrote some), then kept as replies come: ids stay unique in the run (scopeIds).
   */
  #toolIds(): Set<string> {
    if (this.#usedIds) return this.#usedIds;
    const records =
      this.#audit.length > 0 && existsSync(this.#audit.path)
        ? readTape(this.#audit.path, { tolerant: true })
        : [];
    this.#usedIds = usedToolIds(records.map((r) => (r.kind === "call" ? r.response : undefined)));
    return this.#usedIds;
  }

  #charge(entry: GatewayEntry, usage: Usage, cost: number): void {
    const state = this.#stateOf(entry);
    state.spentUsd += cost;
    this.#purse.charge(cost, usage.input + usage.output + usage.cacheWrite + usage.cacheRead);
    this.#calls++;
    if (entry.budgetUsd !== undefined && state.spentUsd >= entry.budgetUsd && !state.disabled) {
      state.disabled = true;
      this.#audit.append({
        kind: "event",
        event: "model_disabled",
        data: { entry: entry.name, reason: "budget", spentUsd: state.spentUsd, budgetUsd: entry.budgetUsd },
      });
    }
  }

  #checkRunBudget(request: ModelRequest): void {
    const over = this.#purse.over();
    if (!over) return;
    this.#audit.append({
      kind: "event",
      event: "budget_exceeded",
      data: { role: request.role, reason: over },
    });
    throw new BudgetExceeded(over);
  }

  #recordInjected(request: ModelRequest): void {
    for (const item of request.injected ?? []) {
      this.#audit.append({
        kind: "injected",
        role: request.role,
        source: item.kind,
        ref: item.ref,
        sha256: item.sha256,
        ...(request.meta.iteration !== undefined ? { iteration: request.meta.iteration } : {}),
        ...(request.meta.step !== undefined ? { step: request.meta.step } : {}),
      });
    }
  }

  #stateOf(entry: GatewayEntry): EntryState {
    const state = this.#state.get(entry.name);
    if (!state) throw new Error(`gateway: unknown entry ${entry.name}`);
    return state;
  }
}

function attempt(
  entry: GatewayEntry,
  outcome: TapeAttempt["outcome"],
  reason: string,
  error: string,
  latencyMs: number,
  status?: number,
  delayMs?: number,
): TapeAttempt {
  return {
    provider: entry.provider.name,
    model: entry.provider.model,
    entry: entry.name,
    outcome,
    error,
    reason,
    latencyMs: Math.round(latencyMs),
    ...(status !== undefined ? { status } : {}),
    ...(delayMs !== undefined ? { delayMs } : {}),
  };
}

/**
 * Freezes what a request sends (history messages, tool specs, schema), so the tape's references to
 * earlier calls and the adapters' converted history stay true; the history array itself stays open
 * for the caller to append to.
 */
function freezeSent(request: ModelRequest): void {
  for (const message of request.messages) freezeDeep(message);
  for (const tool of request.tools ?? []) freezeDeep(tool);
  freezeDeep(request.jsonSchema);
}

/** "the provider asked to retry after 120 s (429)" */
export function askedFor(delayMs: number, status: number | undefined): string {
  return `the provider asked to retry after ${seconds(delayMs)} s${status !== undefined ? ` (${status})` : ""}`;
}

function seconds(ms: number): number {
  return Math.ceil(ms / 1000);
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

function zeroUsage(): Usage {
  return { input: 0, output: 0, cacheWrite: 0, cacheRead: 0, reasoning: 0 };
}

/**
 * An invalid-request failure as the run's ending (RequestRefused, or ContextTooLong when the
 * provider says the prompt is past the window); any other error as it is.
 */
function refusal(entry: GatewayEntry, error: Error): Error {
  if (!(error instanceof ProviderError)) return error;
  if (error.reason === "context_length")
    return new ContextTooLong(
      `${entry.name} refused the request as longer than its context window${error.status ? ` (HTTP ${error.status})` : ""}: ${error.message}`,
    );
  if (error.reason !== "invalid_request") return error;
  return new RequestRefused(
    `${entry.name} refused the request as invalid${error.status ? ` (HTTP ${error.status})` : ""}: ${error.message}. A prompt past the model's context window is the usual cause (long tool outputs in one pass)`,
  );
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
