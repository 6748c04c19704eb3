// A lock file naming the process that holds it: one daemon per home, one process driving a run.
// Taking it is an exclusive create; a lock whose process is gone (killed, machine restarted, its
// pid now reused by another program) is stale and taken over; a live one is refused, by name.
import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
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
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, "wx", 0o644); // atomic: only one creator wins
      writeSync(fd, `${JSON.stringify(info)}\n`);
      closeSync(fd);
      return { release: () => releasePidLock(file), ...(stale ? { stale } : {}) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = readPidLock<T>(file);
      if (owner && (owner.host !== hostname() || ownerAlive(owner))) throw refuse(owner);
      stale = owner;
      try {
        unlinkSync(file);
      } catch {
        // someone else removed it first; retry the create
      }
    }
  }
  throw new Error(`cannot take the lock ${file}: it keeps reappearing`);
}

function releasePidLock(file: string): void {
  const owner = readPidLock(file);
  if (owner?.pid === process.pid) unlinkSync(file);
}
