// One process drives a run at a time. Its state, history and audit tape each have a single writer
// by design (the tape's hash chain and the history's sequence break under two), so a second
// `scifi run --resume` of a run that is still going, or a worker racing another, is refused before
// it touches anything. A run whose process died leaves a stale lock, which the resume takes over.
import { mkdirSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { homePaths } from "../paths.ts";
import { acquirePidLock, LockHeld, ownerAlive, type PidLockOwner, readPidLock } from "../pid-lock.ts";
import type { RunFolder } from "../run-folder/folder.ts";
import { sha256 } from "../sha256.ts";

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

export interface TaskFolderOwner extends PidLockOwner {
  runId: string;
  taskDir: string;
}

/** A second run of a task folder while one uses it: refused, naming the run that holds it. */
export class TaskFolderBusy extends LockHeld<TaskFolderOwner> {
  override name = "TaskFolderBusy";
  constructor(file: string, owner: TaskFolderOwner) {
    super(
      `task folder ${owner.taskDir} is in use by run ${owner.runId} (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}); one run at a time per task folder (two would lend, restore and judge the same files at once): wait for it to end, or run a copy of the folder. If that process is gone (its host crashed), delete ${file}.`,
      owner,
    );
  }
}

/**
 * One run at a time per task folder (in this home): takes the folder's lock or throws
 * TaskFolderBusy naming the run that holds it; returns the release function.
 */
export function lockTaskFolder(home: string, taskDir: string, runId: string): () => void {
  const dir = homePaths(home).taskLocks;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${sha256(taskDir).slice(0, 32)}.lock`);
  return acquirePidLock<TaskFolderOwner>(file, { runId, taskDir }, (owner) => new TaskFolderBusy(file, owner))
    .release;
}
