// A person's hand on a running run (`scifi ctl <run>`): each decision is one file in the run
// folder's control/ (written atomically, never rewritten), so it works from another shell or another
// machine that shares the run folder. The process driving the run polls the folder: a limit change
// applies at once through the run's clock and purse (runner/run/session/limits.ts), a pause at the next
// phase boundary; each decision goes on the history. The run folder is the runner's: it is never
// mounted into a sandbox, so the agent can neither read nor write a decision.
import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { join } from "node:path";
import { z } from "zod";
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

// A decision file is read from disk, so it is checked like any input: a hand edit, another tool or
// a future version's shape must not reach the clock or the purse (a null cap, a NaN deadline).
const positive = z.number().finite().positive();
const DecisionSchema = z.discriminatedUnion("action", [
  z.object({
    action: z.literal("limits"),
    at: z.string(),
    by: z.string(),
    limits: z
      .object({
        iterations: positive.int().optional(),
        walltimeSec: positive.optional(),
        usd: positive.optional(),
      })
      .strict()
      .refine((l) => Object.keys(l).length > 0, "names no limit"),
  }),
  z.object({ action: z.literal("pause"), at: z.string(), by: z.string() }),
  z.object({ action: z.literal("resume"), at: z.string(), by: z.string() }),
]) satisfies z.ZodType<ControlDecision>;

const DECISION_NAME = /^\d{15}-(?:\d{6})?[0-9a-f]{8}-(limits|pause|resume)\.json$/;
/** A decision is a few hundred bytes; anything far larger is not one (and is not read whole). */
const MAX_DECISION_BYTES = 64 * 1024;

/** Who decided: the user and the host, as a shared run folder sees several. */
export function decider(): string {
  return `${userInfo().username}@${hostname()}`;
}

/**
 * Writes one decision as a file of its own; names sort in the order they were made (time first),
 * and a random part keeps two made in the same millisecond apart. Returns the file's name.
 */
/** Decisions this process wrote: two in one millisecond keep the order they were made in. */
let written = 0;

export function writeDecision(controlDir: string, decision: ControlDecision): string {
  const order = String(written++ % 1_000_000).padStart(6, "0");
  const name = `${String(Date.now()).padStart(15, "0")}-${order}${randomBytes(4).toString("hex")}-${decision.action}.json`;
  writeJsonAtomic(join(controlDir, name), decision, { mode: 0o600 });
  return name;
}

/** The decision file names a run has applied (or refused); an older state kept only the last one. */
export type Applied = readonly string[] | string | undefined;

function isApplied(name: string, applied: Applied): boolean {
  if (applied === undefined) return false;
  // Before the set: every name up to the last applied one was taken.
  if (typeof applied === "string") return name <= applied;
  return applied.includes(name);
}

/** What one look at control/ found: decisions to apply, and names that are no decision (why). */
export interface DecisionScan {
  decisions: { name: string; decision: ControlDecision }[];
  refused: { name: string; action: "limits" | "pause" | "resume" | "folder"; why: string }[];
}

/**
 * Every decision-named entry of control/ not applied yet, in name order. Never throws: a control
 * that is no folder, an entry that is no regular file (a FIFO would block a read forever; a link
 * would make a decision whatever its target holds now) or no valid decision is refused with why.
 */
export function scanDecisions(controlDir: string, applied: Applied): DecisionScan {
  const scan: DecisionScan = { decisions: [], refused: [] };
  let names: string[];
  try {
    const stat = lstatSync(controlDir, { throwIfNoEntry: false });
    if (stat === undefined) return scan;
    if (!stat.isDirectory()) {
      scan.refused.push({
        name: "control",
        action: "folder",
        why: `${controlDir} is not a folder; remove it so that scifi ctl decisions can reach the run`,
      });
      return scan;
    }
    names = readdirSync(controlDir).sort();
  } catch (error) {
    scan.refused.push({
      name: "control",
      action: "folder",
      why: `cannot read ${controlDir}: ${message(error)}`,
    });
    return scan;
  }
  for (const name of names) {
    const match = DECISION_NAME.exec(name);
    if (!match || isApplied(name, applied)) continue;
    const action = match[1] as "limits" | "pause" | "resume";
    const read = readDecisionFile(join(controlDir, name));
    if (typeof read === "string") {
      scan.refused.push({ name, action, why: read });
      continue;
    }
    const parsed = DecisionSchema.safeParse(read);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(whole)"}: ${i.message}`);
      scan.refused.push({ name, action, why: `not a valid ${action} decision (${issues.join("; ")})` });
    } else if (parsed.data.action !== action)
      scan.refused.push({
        name,
        action,
        why: `holds a ${parsed.data.action} decision under a ${action} name`,
      });
    else scan.decisions.push({ name, decision: parsed.data });
  }
  return scan;
}

/** Decisions not applied yet (by name), in name order; anything that is not one is skipped. */
export function readDecisions(
  controlDir: string,
  applied: Applied,
): { name: string; decision: ControlDecision }[] {
  return scanDecisions(controlDir, applied).decisions;
}

/** The file's JSON, or why it is no decision file: opened without following a link, nor blocking. */
function readDecisionFile(file: string): unknown {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ELOOP" ? "is a symbolic link, not a decision file" : `cannot open it: ${message(error)}`;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return "is not a regular file";
    if (stat.nlink !== 1) return `is a regular file with ${stat.nlink} hard links; a decision has one`;
    if (stat.size > MAX_DECISION_BYTES)
      return `is ${stat.size} bytes; a decision is under ${MAX_DECISION_BYTES}`;
    const buffer = Buffer.alloc(stat.size);
    let got = 0;
    while (got < stat.size) {
      const n = readSync(fd, buffer, got, stat.size - got, got);
      if (n === 0) break;
      got += n;
    }
    try {
      return JSON.parse(buffer.subarray(0, got).toString("utf8")) as unknown;
    } catch {
      return "is not whole JSON";
    }
  } catch (error) {
    return `cannot read it: ${message(error)}`;
  } finally {
    closeSync(fd);
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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

/**
 * Why a run refuses this kind of decision whoever asks, or undefined: a run a tool started and reads
 * the outcome of (RunState.startedBy) is resumed by nobody, so a pause would leave it stopped with no
 * verdict for good, and an eval trial's limits are its eval's plan (every trial of a cell runs with
 * the same). Asked by `scifi ctl` before writing, and by the run for a decision found in control/.
 */
export function starterRefusal(
  state: Pick<RunState, "runId" | "startedBy">,
  action: ControlDecision["action"],
): string | undefined {
  const starter = state.startedBy;
  if (starter === undefined || action === "resume") return undefined;
  if (starter.tool === "check-task") {
    if (action !== "pause") return undefined;
    return `run ${state.runId} is scifi check-task's '${starter.audit}' audit run: check-task reads its outcome and nobody resumes it, so it takes no pause; stop check-task (Ctrl-C) and run it again when you are ready`;
  }
  const run = `run ${state.runId} is trial ${starter.trialId} of eval ${starter.evalId}`;
  if (action === "pause")
    return `${run}: the eval reads its outcome and nobody resumes it, so it takes no pause; stop the eval (Ctrl-C) and continue it with 'scifi eval --resume ${starter.evalId}'`;
  return `${run}: its limits are the eval's plan (eval.json tasks[].limits), the same for every trial it compares, so ctl does not change them; the eval's own knobs are the suite's limits: (for a new eval) and its budget ('scifi eval --resume ${starter.evalId} --budget-usd X')`;
}

/** The decisions' consumer inside the process driving the run. */
export class RunControl {
  readonly #dir: string;
  readonly #state: RunState;
  readonly #history: HistoryTape;
  readonly #limits: RunLimits;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** Why control/ could not be read, once recorded (so a lasting fault is not recorded each second). */
  #folderRefused: string | undefined;

  constructor(dir: string, state: RunState, history: HistoryTape, limits: RunLimits) {
    this.#dir = dir;
    this.#state = state;
    this.#history = history;
    this.#limits = limits;
  }

  /** Polls every `everyMs` (SCIFI_CTL_POLL_MS, default 1 s) until stopped; the driver also polls at each boundary. */
  start(everyMs = Number(process.env.SCIFI_CTL_POLL_MS) || 1000): void {
    this.poll();
    // poll() does not throw by design; the guard keeps it so: a throw from a timer kills the process.
    this.#timer = setInterval(() => {
      try {
        this.poll();
      } catch (error) {
        process.stderr.write(`scifi: reading ctl decisions failed (${message(error)}); retrying\n`);
      }
    }, everyMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Applies every decision not applied yet (by name, not by order: a writer's clock may be behind),
   * each recorded on the history; a file that is no decision is recorded as refused, once.
   */
  poll(): void {
    const { decisions, refused } = scanDecisions(this.#dir, this.#state.controlApplied);
    for (const bad of refused) {
      if (bad.action === "folder") {
        // Not a file name: recorded once per process, looked at again at each poll.
        if (this.#folderRefused === bad.why) continue;
        this.#folderRefused = bad.why;
      }
      this.#history.append({
        type: "control",
        iteration: this.#state.iteration,
        action: bad.action,
        decision: bad.name,
        refused: bad.why,
      });
      if (bad.action !== "folder") this.#markApplied(bad.name);
    }
    if (refused.every((r) => r.action !== "folder")) this.#folderRefused = undefined;
    for (const { name, decision } of decisions) {
      this.#apply(name, decision);
      this.#markApplied(name);
    }
  }

  #markApplied(name: string): void {
    const before = this.#state.controlApplied;
    const applied = typeof before === "string" ? [before] : [...(before ?? [])];
    applied.push(name);
    this.#state.controlApplied = applied;
  }

  #apply(name: string, decision: ControlDecision): void {
    const base = {
      type: "control" as const,
      iteration: this.#state.iteration,
      decision: name,
      by: decision.by,
    };
    // ctl refuses these up front; a decision file written by other means is refused here.
    const notForThisRun = starterRefusal(this.#state, decision.action);
    if (notForThisRun) {
      this.#history.append({ ...base, action: decision.action, refused: notForThisRun });
      return;
    }
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
