// Replay: answers each call from a recorded audit tape, in order, after checking that the new
// request is the recorded one (both redacted and normalised; each run's own id reads as `<run>`).
// The first divergence stops the run with the call, the JSON path of the first difference and 80
// characters around it on each side: this is the exact-reproduction path. Calls a resumed run made
// again are answered once (runner/llm/tape-calls.ts), as the recorded run stands.
import { existsSync } from "node:fs";
import type { Redactor } from "../../audit/redact.ts";
import type { CallRecord } from "../../audit/types.ts";
import { readTape, verifyTape } from "../../audit/verify.ts";
import { readHistory } from "../../memory/history.ts";
import { runFiles } from "../../paths.ts";
import { ProviderError } from "../errors.ts";
import { type ReplayedChange, replayedChanges } from "../replay-control.ts";
import { standingCalls } from "../tape-calls.ts";
import { tapeRequest } from "../tape-request.ts";
import { ModelError, type ModelRequest, type StopReason } from "../types.ts";
import type { Provider, ProviderResult } from "./provider.ts";

/** The new run asked something the recorded run did not. */
export class ReplayDivergence extends ModelError {
  override name = "ReplayDivergence";
}

export class ReplayProvider implements Provider {
  readonly name = "replay";
  readonly model: string;
  readonly #calls: CallRecord[];
  readonly #redactor: Redactor;
  readonly #source: string;
  /** When the recorded run started (its history's first event, else its tape's first record). */
  readonly recordedStart: string | undefined;
  #next = 0;
  /** The recorded run's ctl limit changes not yet handed to the session (replay-control.ts). */
  #changes: ReplayedChange[];

  constructor(
    calls: CallRecord[],
    redactor: Redactor,
    source: string,
    recordedStart?: string,
    changes: ReplayedChange[] = [],
  ) {
    this.#calls = calls;
    this.#changes = [...changes];
    this.#redactor = redactor;
    this.#source = source;
    this.recordedStart = recordedStart;
    this.model = `replay-of-${calls[0]?.runId ?? "empty"}`;
  }

  /**
   * The prompt budget the pass about to start was kept under when recorded: `contextBudget` on the
   * next recorded call of this kind and rank (a pass asks at its start, and its first call carries
   * the budget it started with; a refusal only lowers it later). Each pass gets its own: a run
   * resumed under another window holds passes kept under two budgets (a41c). Past the last such
   * call (a replay that asks more than was recorded), the largest any of them recorded.
   */
  recordedBudget(kind: string, rank: number): number | undefined {
    const ours = (c: CallRecord) => c.request.kind === kind && c.request.rank === rank;
    // The next call of the kind and rank, with or without a budget (a pass recorded with no window).
    const next = this.#calls.slice(this.#next).find(ours);
    if (next) return next.request.contextBudget;
    const budgets = this.#calls
      .filter(ours)
      .map((c) => c.request.contextBudget)
      .filter((b): b is number => b !== undefined);
    return budgets.length > 0 ? Math.max(...budgets) : undefined;
  }

  /**
   * Whether the recorded run's budget counted thinking blocks for this kind and rank (false where
   * its calls say `thinkingDropped`), so the replay estimates as it did.
   */
  sendsThinking(kind: string, rank: number): boolean {
    return !this.#calls.some(
      (c) => c.request.kind === kind && c.request.rank === rank && c.request.thinkingDropped,
    );
  }

  /** The roles the recorded run called (a replay asks no other optional agent). */
  roles(): ReadonlySet<string> {
    return new Set(this.#calls.map((c) => c.role));
  }

  /** Loads the answered calls of a run folder's tape; refuses a tape whose chain is broken. */
  static fromRunDir(runDir: string, redactor: Redactor): ReplayProvider {
    const path = runFiles(runDir).audit;
    if (!existsSync(path))
      throw new ModelError(`replay: no audit tape at ${path}; pass the folder of a recorded run`);
    const verdict = verifyTape(path);
    if (!verdict.ok) {
      throw new ModelError(
        `replay: the tape ${path} is damaged at line ${verdict.line} (${verdict.reason}); it cannot be replayed`,
      );
    }
    const records = readTape(path);
    const calls = standingCalls(records).filter((r) => r.response !== undefined || refusedForLength(r));
    const history = runFiles(runDir).history;
    const events = existsSync(history) ? readHistory(history) : [];
    const started = events[0]?.time ?? records[0]?.time;
    return new ReplayProvider(calls, redactor, path, started, replayedChanges(events, calls));
  }

  /** The recorded ctl changes due before the next call (Model.replayedControl), each once. */
  dueChanges(): ReplayedChange[] {
    const due = this.#changes.filter((c) => c.beforeCall <= this.#next);
    this.#changes = this.#changes.filter((c) => c.beforeCall > this.#next);
    return due;
  }

  /** How far the replay went: calls answered, and recorded calls never asked for. */
  summary(): { answered: number; recorded: number; unused: number } {
    return { answered: this.#next, recorded: this.#calls.length, unused: this.#calls.length - this.#next };
  }

  async call(request: ModelRequest): Promise<ProviderResult> {
    const index = this.#next;
    const recorded = this.#calls[index];
    if (!recorded || (!recorded.response && !refusedForLength(recorded))) {
      throw new ReplayDivergence(
        `replay: call ${index + 1} (${request.role}) has no recorded answer: the tape ${this.#source} holds ${this.#calls.length} answered call(s)`,
      );
    }
    const now = sortKeys({
      role: request.role,
      request: ownRunId(this.#redactor.value(tapeRequest(request)), request.meta.runId),
    });
    const then = sortKeys({ role: recorded.role, request: ownRunId(recorded.request, recorded.runId) });
    const difference = firstDifference(then, now);
    if (difference) {
      const where = [
        recorded.role,
        recorded.iteration !== undefined ? `iteration ${recorded.iteration}` : "",
        recorded.step !== undefined ? `step ${recorded.step}` : "",
      ]
        .filter(Boolean)
        .join(", ");
      throw new ReplayDivergence(
        `replay: call ${index + 1} (${where}) diverges from the recorded call (seq ${recorded.seq} of ${this.#source})\n${describe(difference)}`,
      );
    }
    this.#next++;
    // The recorded provider refused this request as too long: so does the replay, and the pass
    // compacts and sends it again as it did.
    if (!recorded.response)
      throw new ProviderError(recorded.error?.message ?? "refused as too long", "context_length", 400);
    return {
      content: recorded.response.content,
      stopReason: recorded.response.stopReason as StopReason,
      usage: recorded.usage,
      costUsd: recorded.costUsd,
      wire: { replayOf: { runId: recorded.runId, seq: recorded.seq } },
    };
  }
}

/** Each run's own id (in sandbox names, run folder paths) reads as `<run>`, so two runs compare. */
function ownRunId(value: unknown, runId: string | undefined): unknown {
  if (!runId) return value;
  if (typeof value === "string") return value.replaceAll(runId, "<run>");
  if (Array.isArray(value)) return value.map((v) => ownRunId(v, runId));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, ownRunId(v, runId)]));
  return value;
}

/** Where two requests first differ: the JSON path, and the recorded and new values there. */
export interface Difference {
  path: string;
  recorded: unknown;
  now: unknown;
  /** For two strings: the first differing character. */
  offset?: number;
}

/** The first difference of two JSON values in document order (keys sorted), or undefined. */
export function firstDifference(recorded: unknown, now: unknown, path = "$"): Difference | undefined {
  if (typeof recorded === "string" && typeof now === "string") {
    if (recorded === now) return undefined;
    let offset = 0;
    while (offset < recorded.length && offset < now.length && recorded[offset] === now[offset]) offset++;
    return { path, recorded, now, offset };
  }
  if (Array.isArray(recorded) && Array.isArray(now)) {
    for (let i = 0; i < Math.max(recorded.length, now.length); i++) {
      if (i >= recorded.length || i >= now.length)
        return { path: `${path}[${i}]`, recorded: recorded[i], now: now[i] };
      const found = firstDifference(recorded[i], now[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (isObject(recorded) && isObject(now)) {
    const keys = [...new Set([...Object.keys(recorded), ...Object.keys(now)])].sort();
    for (const key of keys) {
      const at = /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      if (!(key in recorded) || !(key in now)) return { path: at, recorded: recorded[key], now: now[key] };
      const found = firstDifference(recorded[key], now[key], at);
      if (found) return found;
    }
    return undefined;
  }
  return JSON.stringify(recorded) === JSON.stringify(now) ? undefined : { path, recorded, now };
}

const AROUND = 80;

/** The path and up to 80 characters either side of the first difference, recorded and now. */
export function describe(difference: Difference): string {
  const excerpt = (value: unknown): string => {
    if (value === undefined) return "(absent)";
    if (typeof value !== "string" || difference.offset === undefined) {
      const text = JSON.stringify(value);
      return text.length > 2 * AROUND ? `${text.slice(0, 2 * AROUND)}...` : text;
    }
    const from = Math.max(0, difference.offset - AROUND);
    const to = Math.min(value.length, difference.offset + AROUND);
    return `${from > 0 ? "..." : ""}${JSON.stringify(value.slice(from, to))}${to < value.length ? "..." : ""}`;
  };
  const at = difference.offset !== undefined ? `, character ${difference.offset}` : "";
  return [
    `  first difference at ${difference.path}${at}`,
    `  recorded: ${excerpt(difference.recorded)}`,
    `  now:      ${excerpt(difference.now)}`,
  ].join("\n");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  }
  return value;
}

/** A recorded call the provider refused as past the context window (the pass then compacted). */
function refusedForLength(call: CallRecord): boolean {
  return call.response === undefined && call.error?.name === "ContextTooLong";
}
