// Hard limits, enforced by the orchestrator between model calls (CodeScribe's lesson: prompted
// limits are ignored). Nothing the model says can raise them; a rejected call becomes an error
// text the model can act on.
import { Purse } from "../../llm/purse.ts";
import { RunEnding } from "../../run-ending.ts";
import type { LimitConfig } from "../../run-folder/state.ts";
import type { ToolEffect } from "../../tools/tool.ts";

export const DEFAULT_LIMITS: LimitConfig = {
  stepsPerPass: 30,
  toolCallsPerPass: 120,
  toolCallsPerStep: 10,
  maxRepeats: 2,
  maxRepeatsRead: 6,
  failingStepsBeforeBlocker: 3,
  iterations: 5,
  walltimeSec: 3600,
  tokens: 2_000_000,
  usd: 10,
  bashTimeoutSec: 300,
  toolOutputChars: 20_000,
};

export interface ToolCallRequest {
  name: string;
  input: unknown;
  effect: ToolEffect | "unknown";
}

/** Counters of one work pass. */
export class PassLimits {
  readonly config: LimitConfig;
  steps = 0;
  toolCalls = 0;
  #stepCalls = 0;
  #repeats = new Map<string, number>();
  #failingSteps = 0;
  #stepHadSuccess = false;
  #stepHadCall = false;

  constructor(config: LimitConfig) {
    this.config = config;
  }

  /** Before a model call: the reason the pass must end, or undefined. */
  beforeStep(): string | undefined {
    if (this.steps >= this.config.stepsPerPass)
      return `step limit reached (${this.config.stepsPerPass} steps per work pass)`;
    if (this.toolCalls >= this.config.toolCallsPerPass)
      return `tool-call limit reached (${this.config.toolCallsPerPass} per work pass)`;
    this.steps++;
    this.#stepCalls = 0;
    this.#stepHadSuccess = false;
    this.#stepHadCall = false;
    return undefined;
  }

  /** Before a tool call runs: a rejection text for the model, or undefined to let it run. */
  admit(call: ToolCallRequest): string | undefined {
    this.#stepHadCall = true;
    if (this.#stepCalls >= this.config.toolCallsPerStep) {
      return `Rejected by the runner: at most ${this.config.toolCallsPerStep} tool calls per step. Wait for these results, then continue.`;
    }
    if (this.toolCalls >= this.config.toolCallsPerPass) {
      return `Rejected by the runner: the work pass has used all ${this.config.toolCallsPerPass} tool calls.`;
    }
    const key = callKey(call);
    const seen = this.#repeats.get(key) ?? 0;
    const max = call.effect === "read" ? this.config.maxRepeatsRead : this.config.maxRepeats;
    if (call.effect !== "control" && seen >= max) {
      return `Rejected by the runner: this exact ${call.name} call already ran ${seen} times with the same input and nothing was written since. Repeating it will not change the result; try a different approach, or call report_blocker if you are stuck.`;
    }
    this.#repeats.set(key, seen + 1);
    this.#stepCalls++;
    this.toolCalls++;
    return undefined;
  }

  /** After a tool call (run or rejected). */
  record(call: ToolCallRequest, ok: boolean): void {
    if (ok) this.#stepHadSuccess = true;
    if (ok && call.effect === "write") this.#repeats.clear();
  }

  /**
   * At the end of a step: true when this is the Nth consecutive step in which every call failed,
   * i.e. the agent must now be told to report a blocker. A step without calls does not count.
   */
  endStep(): boolean {
    if (!this.#stepHadCall) return false;
    this.#failingSteps = this.#stepHadSuccess ? 0 : this.#failingSteps + 1;
    return this.#failingSteps >= this.config.failingStepsBeforeBlocker;
  }

  get failingSteps(): number {
    return this.#failingSteps;
  }

  stepsLeft(): number {
    return this.config.stepsPerPass - this.steps;
  }

  toolCallsLeft(): number {
    return this.config.toolCallsPerPass - this.toolCalls;
  }
}

/**
 * Run-wide budgets: wall time, tokens, money, checked before every model call. A view on the run's
 * clock and purse (one owner each): it counts nothing of its own.
 */
export class RunBudget {
  readonly config: LimitConfig;
  readonly clock: RunClock;
  readonly purse: Purse;

  constructor(
    config: LimitConfig,
    spent: { tokens: number; usd: number; elapsedMs: number } = { tokens: 0, usd: 0, elapsedMs: 0 },
    owners?: { clock: RunClock; purse: Purse },
  ) {
    this.config = config;
    this.clock = owners?.clock ?? new RunClock(config, spent.elapsedMs);
    this.purse = owners?.purse ?? new Purse(config, spent);
  }

  get tokens(): number {
    return this.purse.tokens;
  }

  get usd(): number {
    return this.purse.usd;
  }

  get startedAt(): number {
    return this.clock.startedAt;
  }

  /** A response's spend, unless the gateway already charged the purse (it does for every call it makes). */
  add(tokens: number, usd: number): void {
    if (!this.purse.chargedByGateway) this.purse.charge(usd, tokens);
  }

  elapsedMs(): number {
    return this.clock.elapsedMs();
  }

  /** The exhausted budget, or undefined. Checked before every model call. */
  exhausted(): string | undefined {
    if (this.clock.leftMs() <= 0) return `wall time limit reached (${this.config.walltimeSec} s)`;
    if (this.tokens >= this.config.tokens)
      return `token limit reached (${this.tokens} of ${this.config.tokens})`;
    if (this.usd >= this.config.usd)
      return `budget limit reached (USD ${this.usd.toFixed(4)} of ${this.config.usd})`;
    return undefined;
  }
}

/** The longest a timer waits in one go (Node's limit); a later deadline re-arms it. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The run's clock: the one owner of its wall time. The deadline, the time a command or a model call
 * may still take, and the abort at the deadline all come from here, and follow a walltime changed
 * mid-run (`scifi ctl <run> limits --walltime`). `config` is the run's live limits (state.limits).
 */
export class RunClock {
  readonly config: LimitConfig;
  /** When the clock would have started had it never been held (moves forward by each hold). */
  startedAt: number;
  readonly #controller = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(config: LimitConfig, elapsedMs = 0) {
    this.config = config;
    this.startedAt = Date.now() - elapsedMs;
  }

  /**
   * Runs `wait` with the clock held: the time it takes is not the run's (a start approval a person
   * answers in the morning: nothing runs and nothing costs meanwhile), so the deadline, the time
   * left and the elapsed time all move past it, and the timer restarts after.
   */
  async hold<T>(wait: () => Promise<T>): Promise<T> {
    const timing = this.#timer !== undefined;
    this.stop();
    const from = Date.now();
    try {
      return await wait();
    } finally {
      this.startedAt += Date.now() - from;
      if (timing) this.start();
    }
  }

  elapsedMs(): number {
    return Date.now() - this.startedAt;
  }

  /** The wall-time deadline, ms since the epoch. */
  deadline(): number {
    return this.startedAt + this.config.walltimeSec * 1000;
  }

  leftMs(): number {
    return Math.max(0, this.deadline() - Date.now());
  }

  /** Aborted at the deadline (reason: WallTimeReached): every running command is killed then. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Starts the deadline's timer (once per process that drives the run). */
  start(): void {
    if (this.#controller.signal.aborted) return;
    clearTimeout(this.#timer);
    const left = this.leftMs();
    this.#timer = setTimeout(
      () => {
        if (this.leftMs() > 0) return this.start();
        this.#controller.abort(new WallTimeReached(this.config.walltimeSec));
      },
      Math.min(left, MAX_TIMER_MS),
    );
    this.#timer.unref();
  }

  /** A new walltime (seconds): the deadline, the timer and the time left move with it. */
  setWalltime(seconds: number): void {
    this.config.walltimeSec = seconds;
    if (this.#timer !== undefined) this.start();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** The run's wall time ran out (the clock's abort reason): the run ends failed. */
export class WallTimeReached extends RunEnding {
  override name = "WallTimeReached";
  constructor(walltimeSec: number) {
    super(`wall time limit reached (${walltimeSec} s)`, { status: "failed", limit: "walltime" });
  }
}

/**
 * The run's stop: one signal that every phase, command and model call listens to, aborted by a
 * cancel (the caller's signal) or the clock's deadline, with the reason; and a pause asked for, which
 * the driver takes at the next phase boundary (nothing in flight is cut short by it).
 */
export class RunStop {
  readonly signal: AbortSignal;
  #pause: string | undefined;

  constructor(clock: RunClock, cancel?: AbortSignal) {
    this.signal = cancel ? AbortSignal.any([cancel, clock.signal]) : clock.signal;
  }

  /** Why the run must end now (a cancel, the deadline), or undefined. */
  ending(): RunEnding | undefined {
    const reason: unknown = this.signal.aborted ? this.signal.reason : undefined;
    return reason instanceof RunEnding ? reason : undefined;
  }

  pause(reason: string): void {
    this.#pause ??= reason;
  }

  /** A pause not yet taken is withdrawn (`scifi ctl <run> resume` before the boundary came). */
  unpause(): void {
    this.#pause = undefined;
  }

  /** The pause asked for (its reason), taken at the next phase boundary. */
  get pauseRequested(): string | undefined {
    return this.#pause;
  }
}

/** A run's limits, one owner each, made once per run (start or resume) and handed to the phases. */
export interface RunLimits {
  /** The live limit values (state.limits): a change is checkpointed with the state. */
  config: LimitConfig;
  clock: RunClock;
  purse: Purse;
  stop: RunStop;
  budget: RunBudget;
}

export function runLimits(
  config: LimitConfig,
  spent: { tokens: number; usd: number; elapsedMs: number },
  cancel?: AbortSignal,
): RunLimits {
  const clock = new RunClock(config, spent.elapsedMs);
  const purse = new Purse(config, spent);
  return {
    config,
    clock,
    purse,
    stop: new RunStop(clock, cancel),
    budget: new RunBudget(config, spent, { clock, purse }),
  };
}

/** Stable key of a call: tool name plus canonical JSON of its input (key order ignored). */
export function callKey(call: { name: string; input: unknown }): string {
  return `${call.name}:${canonicalJson(call.input)}`;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** `--limit key=value` flags: a partial config, or an error text naming the bad flag and the keys. */
export function parseLimitFlags(flags: readonly string[]): Partial<LimitConfig> | string {
  const keys = Object.keys(DEFAULT_LIMITS) as (keyof LimitConfig)[];
  const out: Partial<LimitConfig> = {};
  for (const flag of flags) {
    const [key = "", value = ""] = flag.split("=", 2);
    if (!keys.includes(key as keyof LimitConfig)) {
      return `--limit ${flag}: unknown limit '${key}'; limits: ${keys.join(", ")}`;
    }
    const number = Number(value);
    if (value === "" || !Number.isFinite(number) || number <= 0) {
      return `--limit ${flag}: the value must be a positive number`;
    }
    out[key as keyof LimitConfig] = number;
  }
  return out;
}
