// `scifi cancel` and `scifi retry`: with a daemon running, leave it a request and wait until the
// task's status file shows the result; with none, change the status file directly (the next
// daemon start picks a retried task up).
import { basename, dirname } from "node:path";
import { type RequestAction, refusal, requeue, resumePaused, writeRequest } from "./control.ts";
import { FOLDER_SAM } from "./inbox.ts";
import { liveOwner } from "./lock.ts";
import { isWorkerOf, signalWorker, waitForExit } from "./process.ts";
import {
  daemonPaths,
  FINAL_STATES,
  lastAttempt,
  listTasks,
  readTask,
  type TaskRecord,
  writeTask,
} from "./records.ts";

export class OperatorError extends Error {
  override name = "OperatorError";
}

/** The task key for what the user typed: a key (`foo.md`, `foo`) or a path to the SAM or its folder. */
export function resolveKey(home: string, given: string): string {
  const candidates = [given, basename(given)];
  if (basename(given) === FOLDER_SAM) candidates.push(basename(dirname(given)));
  for (const key of candidates) if (readTask(home, key)) return key;
  const known = listTasks(home).map((t) => t.key);
  throw new OperatorError(
    `no daemon task '${given}'${known.length ? `; known tasks: ${known.join(", ")}` : " (the daemon has recorded no tasks yet)"}`,
  );
}

export interface OperatorResult {
  record: TaskRecord;
  /** How it was applied: by the running daemon, or directly on the status file. */
  via: "daemon" | "direct";
}

export async function operate(
  home: string,
  given: string,
  action: RequestAction,
  timeoutMs = 60_000,
): Promise<OperatorResult> {
  const key = resolveKey(home, given);
  const record = readTask(home, key) as TaskRecord;
  const refused = refusal(record, action);
  if (refused) throw new OperatorError(refused);
  if (liveOwner(daemonPaths(home).lock)) {
    writeRequest(home, key, action);
    return { record: await waitForChange(home, record, action, timeoutMs), via: "daemon" };
  }
  if (action === "resume") {
    // The next daemon start schedules it.
    resumePaused(record);
  } else if (action === "retry") {
    requeue(record, home);
  } else {
    const attempt = lastAttempt(record);
    if (record.state === "running" && attempt && isWorkerOf(attempt.pid, attempt.runId) && attempt.pid) {
      // A worker that outlived its daemon: let it checkpoint and stop its sandbox.
      signalWorker(attempt.pid, "SIGTERM");
      await waitForExit(attempt.pid, attempt.runId);
    }
    if (attempt) delete attempt.pid;
    record.reason =
      record.state === "paused"
        ? "cancelled by the operator while paused (its run keeps its checkpoint)"
        : "cancelled by the operator (no daemon was running)";
    record.state = "cancelled";
    delete record.resumeRunId;
  }
  writeTask(home, record);
  return { record, via: "direct" };
}

async function waitForChange(
  home: string,
  before: TaskRecord,
  action: RequestAction,
  timeoutMs: number,
): Promise<TaskRecord> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const now = readTask(home, before.key);
    // A cancel is done once the task ended; a retry or a resume once the daemon re-queued (or
    // already started) it.
    const acted =
      action === "cancel" ? FINAL_STATES.has(now?.state ?? "running") : now?.updatedAt !== before.updatedAt;
    if (now && acted) return now;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new OperatorError(
    `the daemon has not acted on the request for ${before.key} within ${Math.round(timeoutMs / 1000)} s; check its log, or 'scifi status'`,
  );
}
