// One process drives a run at a time. Its state, history and audit tape each have a single writer
// by design (the tape's hash chain and the history's sequence break under two), so a second
// `scifi run --resume` of a run that is still going, or a worker racing another, is refused before
// it touches anything. A run whose process died leaves a stale lock, which the resume takes over.
import { acquirePidLock, LockHeld, type PidLockOwner } from "../pid-lock.ts";
import type { RunFolder } from "./records.ts";

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
