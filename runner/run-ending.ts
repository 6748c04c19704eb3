// The one way an error ends a run with an outcome instead of crashing the process. An error class
// that ends runs either extends RunEnding or, when it must extend another base (ModelError,
// SandboxError), carries an `[ENDING]` of its own; `error instanceof RunEnding` is true for both, so
// the driver and the tools test one type, and renaming a class cannot turn an outcome into a crash.

/** How an error ends a run. */
export interface Ending {
  status: "failed" | "blocked" | "cancelled";
  /** The name of the history's `limit` event (tampering is recorded per file instead). */
  limit: string;
  /** Put before the message in the outcome's reason ("budget: ..."). */
  prefix?: string;
  /**
   * Why a failed run failed when it was not the task: `sandbox` (it died twice in one phase; exit
   * code 4), `model` (every model of the rank was asked and none answered: an outage, a bad key).
   */
  cause?: InfrastructureCause;
}

/** Failures of what the run stands on, not of the task: `scifi eval` counts them as errors. */
export type InfrastructureCause = "sandbox" | "model";

export const ENDING: unique symbol = Symbol("scifi.run-ending");

export interface EndsRun {
  readonly [ENDING]: Ending;
}

export class RunEnding extends Error implements EndsRun {
  override name = "RunEnding";
  readonly [ENDING]: Ending;
  constructor(message: string, ending: Ending) {
    super(message);
    this[ENDING] = ending;
  }

  /** `x instanceof RunEnding` also holds for the errors that carry an ending on another base. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: a subclass's instanceof tests its own prototype chain
    if (this !== RunEnding) return Function.prototype[Symbol.hasInstance].call(this, value);
    return endingOf(value) !== undefined;
  }
}

/**
 * A person cancelled the run while it ran (`scifi cancel` of a daemon task): it ends `cancelled`
 * through the same exit as every outcome (task folder restored, hidden assets back, report, lock
 * released). The reason the run's abort signal carries.
 */
export class RunCancelled extends RunEnding {
  override name = "RunCancelled";
  constructor(message: string) {
    super(message, { status: "cancelled", limit: "cancelled" });
  }
}

function endingOf(value: unknown): Ending | undefined {
  return value instanceof Error ? (value as Partial<EndsRun>)[ENDING] : undefined;
}

/** The outcome an ending error gives the run, with the history's limit name. */
export function outcomeOfEnding(error: Error): {
  status: Ending["status"];
  reason: string;
  limit: string;
  cause?: InfrastructureCause;
} {
  const ending = endingOf(error);
  if (!ending) throw new TypeError(`${error.name} does not end a run: ${error.message}`);
  return {
    status: ending.status,
    reason: ending.prefix ? `${ending.prefix}: ${error.message}` : error.message,
    limit: ending.limit,
    ...(ending.cause ? { cause: ending.cause } : {}),
  };
}

/**
 * A signal (SIGTERM, SIGINT, SIGHUP) interrupted the run: it is not an ending. The run's stop is
 * aborted with this as the reason, so what is in flight stops; the driver throws it on without an
 * outcome or a checkpoint of the cut phase, the run's exit restores the task folder and returns the
 * hidden assets, and `--resume` continues from the last completed phase.
 */
export class RunInterrupted extends Error {
  override name = "RunInterrupted";
  readonly signal: NodeJS.Signals;
  constructor(signal: NodeJS.Signals) {
    super(`${signal}: the run was interrupted; its last completed phase is on disk`);
    this.signal = signal;
  }
}

/** The interruption a run's stop was aborted with (a signal), or undefined. */
export function interruptionOf(signal: AbortSignal): RunInterrupted | undefined {
  return signal.aborted && signal.reason instanceof RunInterrupted ? signal.reason : undefined;
}
