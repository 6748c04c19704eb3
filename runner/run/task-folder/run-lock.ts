// One process drives a run at a time. Its state, history and audit tape each have a single writer
// by design (the tape's hash chain and the history's sequence break under two), so a second
// `scifi run --resume` of a run that is still going, or a worker racing another, is refused before
// it touches anything. A run whose process died leaves a stale lock, which the resume takes over.
import { hostname } from "node:os";
import { acquirePidLock, LockHeld, ownerAlive, type PidLockOwner, readPidLock } from "../../pid-lock.ts";
import type { RunFolder } from "../../run-folder/folder.ts";

export interface RunLockOwner extends PidLockOwner {
  runId: string;
}

export class RunLocked extends LockHeld<RunLockOwner> {
  override name = "RunLocked";
  constructor(file: string, owner: RunLockOwner) {
    super(
      `run ${owner.runId} is being driven by another scifi process (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}); a run has one writer: wait for it to end, or stop it (kill ${owner.pid}) and resume then. If that process is gone (its host crashed), delete ${file}.`,
      owner,
    );
  }
}

/** Takes the run's lock or throws RunLocked naming the live owner; returns the release function. */
export function lockRun(folder: RunFolder, runId: string): () => void {
  const file = folder.files.lock;
  return acquirePidLock<RunLockOwner>(file, { runId }, (owner) => new RunLocked(file, owner)).release;
}

/**
 * Throws RunLocked when a live process holds the run's lock; takes nothing. For what a resume does
 * before it takes the lock (pruning the dead driver's sandbox must not hit a live driver's).
 */
export function refuseLiveRun(folder: RunFolder): void {
  const file = folder.files.lock;
  const owner = readPidLock<RunLockOwner>(file);
  // As acquirePidLock: an owner on another host cannot be checked from here, so it counts as live.
  if (owner && (owner.host !== hostname() || ownerAlive(owner))) throw new RunLocked(file, owner);
}

// The task folder's lock lives at the root (runner/task-folder-lock.ts): the eval, the daemon and
// `scifi submit` look at it too.
export { lockTaskFolder, TaskFolderBusy } from "../../task-folder-lock.ts";

/** True when a live process (or one on another host, which cannot be checked) holds the run's lock. */
export function runDriven(folder: RunFolder): boolean {
  const owner = readPidLock<RunLockOwner>(folder.files.lock);
  return owner !== undefined && (owner.host !== hostname() || ownerAlive(owner));
}
