// One daemon per home (and so per inbox): a lock file holding the owner's pid (runner/pid-lock.ts).
// A lock whose process is gone is stale and taken over; a live one makes the second daemon refuse,
// naming the pid.
import { acquirePidLock, LockHeld, livePidOwner, type PidLockOwner, readPidLock } from "../pid-lock.ts";

export interface LockInfo extends PidLockOwner {
  inbox: string;
}

export class DaemonLocked extends LockHeld<LockInfo> {
  override name = "DaemonLocked";
  constructor(file: string, owner: LockInfo) {
    super(
      `another scifi daemon (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}) already runs on inbox ${owner.inbox} (lock ${file}); stop it first (kill ${owner.pid}) or use another SCIFI_HOME`,
      owner,
    );
  }
}

export function readLock(file: string): LockInfo | undefined {
  return readPidLock<LockInfo>(file);
}

/** The lock's owner when it is a live process on this host, else undefined. */
export function liveOwner(file: string): LockInfo | undefined {
  return livePidOwner<LockInfo>(file);
}

/** Takes the lock or throws DaemonLocked; returns the release function and any stale owner found. */
export function acquireLock(file: string, inbox: string): { release: () => void; stale?: LockInfo } {
  return acquirePidLock<LockInfo>(file, { inbox }, (owner) => new DaemonLocked(file, owner));
}
