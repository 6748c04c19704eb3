// A person's hand on a running run (`scifi ctl <run>`): each decision is one file in the run
// folder's control/ (written atomically, never rewritten), so it works from another shell or another
// machine that shares the run folder. The process driving the run polls the folder: a limit change
// applies at once through the run's clock and purse (runner/run/session/limits.ts), a pause at the next
// phase boundary; each decision goes on the history. The run folder is the runner's: it is never
// mounted into a sandbox, so the agent can neither read nor write a decision.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { join } from "node:path";
import { writeJsonAtomic } from "../../atomic-write.ts";
import type { HistoryTape } from "../../memory/history.ts";
import type { LimitConfig, RunState } from "../../run-folder/state.ts";
import type { RunLimits } from "./limits.ts";

/** The limits `scifi ctl <run> limits` may change, by their LimitConfig names. */
export type ControlLimits = Partial<Pick<LimitConfig, "iterations" | "walltimeSec" | "usd">>;

export type ControlDecision =
  | { action: "limits"; at: string; by: string; limits: ControlLimits }
  | { action: "pause"; at: string; by: string }
  | { action: "resume"; at: string; by: string };

/** Who decided: the user and the host, as a shared run folder sees several. */
export function decider(): string {
  return `${userInfo().username}@${hostname()}`;
}

/**
 * Writes one decision as a file of its own; names sort in the order they were made (time first),
 * and a random part keeps two made in the same millisecond apart. Returns the file's name.
 */
export function writeDecision(controlDir: string, decision: ControlDecision): string {
  const name = `${String(Date.now()).padStart(15, "0")}-${randomBytes(4).toString("hex")}-${decision.action}.json`;
  writeJsonAtomic(join(controlDir, name), decision, { mode: 0o600 });
  return name;
}

/** Decisions after `after` (a file name), in the order they were made; torn or foreign files skipped. */
export function readDecisions(
  controlDir: string,
  after: string | undefined,
): { name: string; decision: ControlDecision }[] {
  if (!existsSync(controlDir)) return [];
  const out: { name: string; decision: ControlDecision }[] = [];
  for (const name of readdirSync(controlDir).sort()) {
    if (!/^\d{15}-[0-9a-f]{8}-(limits|pause|resume)\.json$/.test(name)) continue;
    if (after !== undefined && name <= after) continue;
    try {
      out.push({
        name,
        decision: JSON.parse(readFileSync(join(controlDir, name), "utf8")) as ControlDecision,
      });
    } catch {
      // A file that is not a whole decision is not one.
    }
  }
  return out;
}

/** What the run has used of each limit a person may change. */
export interface Used {
  iterations: number;
  elapsedMs: number;
  usd: number;
}

/** The attempts the most-tried node has had: the iteration limit is counted per node. */
export function iterationsUsed(state: Pick<RunState, "attempts">): number {
  return Math.max(0, ...Object.values(state.attempts));
}

/** Why a change cannot apply (a limit below what is used), naming the limit and the figures; or undefined. */
export function limitsRefusal(change: ControlLimits, used: Used): string | undefined {
  const problems: string[] = [];
  if (change.iterations !== undefined && change.iterations < used.iterations)
    problems.push(
      `--iterations ${change.iterations} is below the ${used.iterations} iteration(s) a node has already used`,
    );
  if (change.usd !== undefined && change.usd < used.usd)
    problems.push(`--budget-usd ${change.usd} is below the USD ${used.usd.toFixed(4)} already spent`);
  if (change.walltimeSec !== undefined && change.walltimeSec * 1000 < used.elapsedMs)
    problems.push(
      `--walltime ${change.walltimeSec} s is below the ${Math.ceil(used.elapsedMs / 1000)} s the run has already run`,
    );
  return problems.length > 0 ? problems.join("; ") : undefined;
}

/** The decisions' consumer inside the process driving the run. */
export class RunControl {
  readonly #dir: string;
  readonly #state: RunState;
  readonly #history: HistoryTape;
  readonly #limits: RunLimits;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(dir: string, state: RunState, history: HistoryTape, limits: RunLimits) {
    this.#dir = dir;
    this.#state = state;
    this.#history = history;
    this.#limits = limits;
  }

  /** Polls every `everyMs` (SCIFI_CTL_POLL_MS, default 1 s) until stopped; the driver also polls at each boundary. */
  start(everyMs = Number(process.env.SCIFI_CTL_POLL_MS) || 1000): void {
    this.poll();
    this.#timer = setInterval(() => this.poll(), everyMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Applies every decision not applied yet, each recorded on the history. */
  poll(): void {
    for (const { name, decision } of readDecisions(this.#dir, this.#state.controlApplied)) {
      this.#apply(name, decision);
      this.#state.controlApplied = name;
    }
  }

  #apply(name: string, decision: ControlDecision): void {
    const base = {
      type: "control" as const,
      iteration: this.#state.iteration,
      decision: name,
      by: decision.by,
    };
    if (decision.action === "pause") {
      this.#limits.stop.pause(`paused by ${decision.by}`);
      this.#history.append({ ...base, action: "pause" });
      return;
    }
    if (decision.action === "resume") {
      // A pause asked for and not yet taken is withdrawn; a paused run is resumed by its new process.
      this.#limits.stop.unpause();
      this.#history.append({ ...base, action: "resume" });
      return;
    }
    const { config, clock, purse } = this.#limits;
    const used = {
      iterations: iterationsUsed(this.#state),
      elapsedMs: clock.elapsedMs(),
      usd: purse.usd,
    };
    const refused = limitsRefusal(decision.limits, used);
    if (refused) {
      this.#history.append({ ...base, action: "limits", refused });
      return;
    }
    const from: Record<string, number> = {};
    const to: Record<string, number> = {};
    for (const key of ["iterations", "walltimeSec", "usd"] as const) {
      const value = decision.limits[key];
      if (value === undefined) continue;
      from[key] = config[key];
      to[key] = value;
    }
    // One owner each: the clock moves the deadline (gateway, commands, timer), the purse's caps are
    // the run's limits object itself, the iteration check reads the same object.
    if (decision.limits.iterations !== undefined) config.iterations = decision.limits.iterations;
    if (decision.limits.usd !== undefined) purse.setCaps({ usd: decision.limits.usd });
    if (decision.limits.walltimeSec !== undefined) clock.setWalltime(decision.limits.walltimeSec);
    this.#history.append({ ...base, action: "limits", from, to });
  }
}
