// Replay: answers each call from a recorded audit tape, in order, after checking that the new
// request is the recorded one (both redacted and normalised). The first divergence stops the run
// with a readable diff: this is the exact-reproduction path.
import { existsSync } from "node:fs";
import type { Redactor } from "../../audit/redact.ts";
import type { CallRecord } from "../../audit/types.ts";
import { readTape, verifyTape } from "../../audit/verify.ts";
import { runFiles } from "../../paths.ts";
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
  #next = 0;

  constructor(calls: CallRecord[], redactor: Redactor, source: string) {
    this.#calls = calls;
    this.#redactor = redactor;
    this.#source = source;
    this.model = `replay-of-${calls[0]?.runId ?? "empty"}`;
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
    const calls = readTape(path).filter(
      (r): r is CallRecord => r.kind === "call" && r.response !== undefined,
    );
    return new ReplayProvider(calls, redactor, path);
  }

  async call(request: ModelRequest): Promise<ProviderResult> {
    const index = this.#next;
    const recorded = this.#calls[index];
    if (!recorded?.response) {
      throw new ReplayDivergence(
        `replay: call ${index + 1} (${request.role}) has no recorded answer: the tape ${this.#source} holds ${this.#calls.length} answered call(s)`,
      );
    }
    const now = normalise(request.role, this.#redactor.value(tapeRequest(request)));
    const then = normalise(recorded.role, recorded.request);
    if (now !== then) {
      throw new ReplayDivergence(
        `replay: call ${index + 1} diverges from ${this.#source} (seq ${recorded.seq}):\n${lineDiff(then, now)}`,
      );
    }
    this.#next++;
    return {
      content: recorded.response.content,
      stopReason: recorded.response.stopReason as StopReason,
      usage: recorded.usage,
      wire: { replayOf: { runId: recorded.runId, seq: recorded.seq } },
    };
  }
}

/** Stable JSON (sorted keys, pretty) so a diff shows the field that changed. */
function normalise(role: string, request: unknown): string {
  return JSON.stringify({ role, request: sortKeys(request) }, null, 2);
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

/** The first differing region of two texts, with 3 lines of context, as `- recorded` / `+ now`. */
export function lineDiff(recorded: string, now: string): string {
  const a = recorded.split("\n");
  const b = now.split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length - 1;
  let endB = b.length - 1;
  while (endA >= start && endB >= start && a[endA] === b[endB]) {
    endA--;
    endB--;
  }
  const context = a.slice(Math.max(0, start - 3), start).map((l) => `  ${l}`);
  const removed = a.slice(start, Math.min(endA + 1, start + 20)).map((l) => `- ${l}`);
  const added = b.slice(start, Math.min(endB + 1, start + 20)).map((l) => `+ ${l}`);
  return ["--- recorded", "+++ now", ...context, ...removed, ...added].join("\n");
}
