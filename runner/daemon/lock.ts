// One daemon per home (and so per inbox): a lock file holding the owner's pid. A lock whose pid is
// dead is stale and taken over; a live one makes the second daemon refuse, naming the pid.
import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { pidAlive } from "./process.ts";

export interface LockInfo {
  pid: number;
  host: string;
  inbox: string;
  startedAt: string;
}

export class DaemonLocked extends Error {
  override name = "DaemonLocked";
  readonly owner: LockInfo;
  constructor(file: string, owner: LockInfo) {
    super(
      `another scifi daemon (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}) already runs on inbox ${owner.inbox} (lock ${file}); stop it first (kill ${owner.pid}) or use another SCIFI_HOME`,
    );
    this.owner = owner;
  }
}

export function readLock(file: string): LockInfo | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as LockInfo;
  } catch {
    return undefined; // torn or empty: treated as stale
  }
}

/** The lock's owner when it is a live process on this host, else undefined. */
export function liveOwner(file: string): LockInfo | undefined {
  const owner = readLock(file);
  if (!owner) return undefined;
  return owner.host === hostname() && pidAlive(owner.pid) ? owner : undefined;
}

/** Takes the lock or throws DaemonLocked; returns the release function and any stale owner found. */
export function acquireLock(file: string, inbox: string): { release: () => void; stale?: LockInfo } {
  const info: LockInfo = { pid: process.pid, host: hostname(), inbox, startedAt: new Date().toISOString() };
  let stale: LockInfo | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, "wx", 0o644); // atomic: only one creator wins
      writeSync(fd, `${JSON.stringify(info)}\n`);
      closeSync(fd);
      return { release: () => releaseLock(file), ...(stale ? { stale } : {}) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = readLock(file);
      if (owner && owner.host !== hostname()) throw new DaemonLocked(file, owner); // another host's pid cannot be checked: refuse
      if (owner && pidAlive(owner.pid)) throw new DaemonLocked(file, owner);
      stale = owner;
      try {
        unlinkSync(file);
      } catch {
        // someone else removed it first; retry the create
      }
    }
  }
  throw new Error(`cannot take the daemon lock ${file}: it keeps reappearing`);
}

function releaseLock(file: string): void {
  const owner = readLock(file);
  if (owner?.pid === process.pid) unlinkSync(file);
}
