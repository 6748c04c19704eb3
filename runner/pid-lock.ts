// A lock file naming the process that holds it: one daemon per home, one process driving a run.
// Taking it is an exclusive create; a lock whose process is gone (killed, machine restarted, its
// pid now reused by another program) is stale and taken over; a live one is refused, by name. Two
// processes that find the same stale lock at once take it over one at a time (a side file), and
// only while it still holds what they read: never both.
import { closeSync, existsSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";

export interface PidLockOwner {
  pid: number;
  host: string;
  startedAt: string;
  /** The process's start time in clock ticks since boot (Linux), which a reused pid does not share. */
  procStart?: string;
}

/** A lock held by a live process: the message names it and says what to do. */
export class LockHeld<T extends PidLockOwner> extends Error {
  readonly owner: T;
  constructor(message: string, owner: T) {
    super(message);
    this.owner = owner;
  }
}

export function pidAlive(pid: number | undefined): boolean {
  if (!pid || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * A killed process whose parent died is a zombie until init reaps it: its pid answers signals, but
 * it runs nothing and holds nothing (field 3 of /proc/PID/stat is `Z`).
 */
export function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

/** Field 22 of /proc/PID/stat; undefined without procfs or for a process that is gone. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

export function readPidLock<T extends PidLockOwner>(file: string): T | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as T;
  } catch {
    return undefined; // torn or empty: treated as stale
  }
}

/** Whether the lock's owner is still the process that took it (on this host). */
export function ownerAlive(owner: PidLockOwner): boolean {
  if (owner.host !== hostname() || !pidAlive(owner.pid) || isZombie(owner.pid)) return false;
  if (owner.procStart === undefined) return true;
  const now = processStart(owner.pid);
  return now === undefined || now === owner.procStart;
}

/** The lock's owner when it is a live process on this host, else undefined. */
export function livePidOwner<T extends PidLockOwner>(file: string): T | undefined {
  const owner = readPidLock<T>(file);
  return owner && ownerAlive(owner) ? owner : undefined;
}

/**
 * Takes the lock or throws what `refuse` makes of the live owner (also for an owner on another
 * host, whose pid cannot be checked from here). Returns the release function and any stale owner.
 */
export function acquirePidLock<T extends PidLockOwner>(
  file: string,
  extra: Omit<T, keyof PidLockOwner>,
  refuse: (owner: T) => Error,
): { release: () => void; stale?: T } {
  const start = processStart(process.pid);
  const info = {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    ...(start !== undefined ? { procStart: start } : {}),
    ...extra,
  } as T;
  let stale: T | undefined;
  const create = (): boolean => {
    try {
      const fd = openSync(file, "wx", 0o644); // atomic: only one creator wins
      writeSync(fd, `${JSON.stringify(info)}\n`);
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      return false;
    }
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    if (create()) return { release: () => releasePidLock(file), ...(stale ? { stale } : {}) };
    const text = settledText(file);
    const owner = text === undefined ? undefined : parseOwner<T>(text);
    if (owner && (owner.host !== hostname() || ownerAlive(owner))) throw refuse(owner);
    stale = owner;
    if (text !== undefined && takeOver(file, text, create))
      return { release: () => releasePidLock(file), ...(stale ? { stale } : {}) };
  }
  throw new Error(`cannot take the lock ${file}: it keeps reappearing`);
}

/**
 * Replaces the stale lock whose text was read by this process's own, only while the file still
 * holds that text: two processes that both found the same dead owner must not both take over (the
 * second would unlink the first one's fresh lock). Takeovers are serialised by a side file made
 * with an exclusive create and removed at once; one left by a process that died inside those few
 * system calls is reported, never removed on a guess.
 */
function takeOver(file: string, staleText: string, create: () => boolean): boolean {
  const side = `${file}.takeover`;
  const deadline = Date.now() + 2000;
  for (;;) {
    try {
      closeSync(openSync(side, "wx", 0o644));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (Date.now() > deadline)
        throw new Error(
          `cannot take over the stale lock ${file}: ${side} was left by a takeover that did not finish (its process died inside it); delete ${side} and try again`,
        );
      sleepSync(10);
    }
  }
  try {
    const now = readText(file);
    if (now !== undefined && now !== staleText) return false; // another process took it meanwhile
    if (now !== undefined) unlinkSync(file);
    return create();
  } finally {
    unlinkSync(side);
  }
}

/**
 * The lock's text, waiting up to a second while it is a young file that does not parse: its
 * creator is between its exclusive create and its write, and is not a dead owner.
 */
function settledText(file: string): string | undefined {
  const deadline = Date.now() + 1000;
  for (;;) {
    const text = readText(file);
    if (text === undefined || parseOwner(text) !== undefined || Date.now() > deadline) return text;
    let young = false;
    try {
      young = Date.now() - statSync(file).mtimeMs < 1000;
    } catch {
      return readText(file);
    }
    if (!young) return text;
    sleepSync(10);
  }
}

/** A short synchronous pause: taking a lock is synchronous, and its waits are milliseconds. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function parseOwner<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined; // torn or empty: treated as stale
  }
}

function releasePidLock(file: string): void {
  const owner = readPidLock(file);
  if (owner?.pid === process.pid) unlinkSync(file);
}
