// Task record transitions shared by the daemon and the offline CLI: (re)queue after validation,
// and the operator's cancel/retry requests (a file the daemon picks up, or applied directly when no
// daemon runs).
import { existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../atomic-write.ts";
import { DEFAULT_LIMITS } from "../run/session/limits.ts";
import { clearRejection, type InboxEntry, sha256File, validateSam, writeRejection } from "./inbox.ts";
import { daemonPaths, FINAL_STATES, type TaskRecord } from "./records.ts";

/** A fresh record for an inbox entry, validated (queued or rejected). */
export function newRecord(home: string, entry: InboxEntry): TaskRecord {
  const now = new Date().toISOString();
  const record: TaskRecord = {
    version: 1,
    key: entry.key,
    kind: entry.kind,
    source: entry.source,
    samFile: entry.kind === "file" ? join(daemonPaths(home).work(entry.key), "task.md") : entry.source,
    sha256: "",
    state: "queued",
    gpus: 0,
    budgetUsd: DEFAULT_LIMITS.usd,
    queuedAt: now,
    updatedAt: now,
    attempts: [],
  };
  return requeue(record, home);
}

/**
 * Re-reads the inbox SAM and puts it through the one gate (skills of `home`); the record becomes
 * queued (at the end) or rejected with the diagnostics in `<source>.rejected.txt`.
 */
export function requeue(record: TaskRecord, home: string): TaskRecord {
  delete record.resumeRunId;
  delete record.reason;
  // A new queueing (an edit, a retry) is a new start: `run` is asked again.
  delete record.runApproval;
  record.queuedAt = new Date().toISOString();
  if (!existsSync(record.source)) {
    record.state = "rejected";
    record.reason = `the SAM ${record.source} no longer exists`;
    return record;
  }
  record.sha256 = sha256File(record.source);
  const validation = validateSam(record.source, home);
  if (!validation.ok) {
    const count = validation.report.split("\n").length;
    // A single-file SAM whose check assets were dropped beside it: the inbox reads the file alone.
    const hint =
      record.kind === "file" && /asset .*does not exist/.test(validation.report)
        ? `a task with check assets needs a folder of its own: put the SAM at tasks/${record.key.replace(/\.md$/, "")}/task.md with its assets (e.g. checks/) beside it`
        : undefined;
    writeRejection(record.source, hint ? `${validation.report}\nhint: ${hint}` : validation.report);
    record.state = "rejected";
    record.reason = `invalid SAM (${count} diagnostic(s), see ${record.source.replace(/\.md$/, ".rejected.txt")}): ${validation.report.split("\n")[0]}${hint ? `; ${hint}` : ""}`;
    return record;
  }
  clearRejection(record.source);
  record.state = "queued";
  record.name = validation.metadata.name;
  record.gpus = validation.metadata.gpu;
  record.budgetUsd = validation.metadata.budgetUsd ?? DEFAULT_LIMITS.usd;
  if (validation.metadata.approval?.length) record.approval = validation.metadata.approval;
  else delete record.approval;
  if (validation.metadata.approvalTimeoutSec !== undefined)
    record.approvalTimeoutSec = validation.metadata.approvalTimeoutSec;
  else delete record.approvalTimeoutSec;
  return record;
}

/** `resume`: a paused task (`scifi ctl <run> resume`) goes back into the queue to continue its run. */
export type RequestAction = "cancel" | "retry" | "resume";

export interface ControlRequest {
  key: string;
  action: RequestAction;
  at: string;
}

/** Leaves a request for the running daemon (`<home>/daemon/requests/<key>.<action>.json`). */
export function writeRequest(home: string, key: string, action: RequestAction): string {
  const dir = daemonPaths(home).requests;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${encodeURIComponent(key)}.${action}.json`);
  const request: ControlRequest = { key, action, at: new Date().toISOString() };
  // Whole or not at all: the daemon never reads a half-written request (it skips *.tmp).
  writeFileAtomic(file, JSON.stringify(request), { tempFile: `${file}.tmp` });
  return file;
}

/** A paused task queued again to continue its run from the checkpoint the pause wrote. */
export function resumePaused(record: TaskRecord): void {
  const attempt = record.attempts.at(-1);
  record.state = "queued";
  if (attempt?.runId) record.resumeRunId = attempt.runId;
  record.reason = "resumed by the operator (scifi ctl resume)";
  record.queuedAt = new Date().toISOString();
}

/** Takes (reads and deletes) every pending request, oldest first. */
export function takeRequests(home: string): ControlRequest[] {
  const dir = daemonPaths(home).requests;
  if (!existsSync(dir)) return [];
  const requests: ControlRequest[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(".json")) continue;
    const file = join(dir, name);
    try {
      requests.push(JSON.parse(readFileSync(file, "utf8")) as ControlRequest);
    } catch {
      // torn or foreign: drop it
    }
    unlinkSync(file);
  }
  return requests.sort((a, b) => a.at.localeCompare(b.at));
}

/** Why a request does not apply to a task in this state, or undefined when it does. */
export function refusal(record: TaskRecord, action: RequestAction): string | undefined {
  if (action === "cancel" && FINAL_STATES.has(record.state))
    return `task ${record.key} already ended (${record.state}); nothing to cancel`;
  if (action === "resume" && record.state !== "paused")
    return `task ${record.key} is ${record.state}; resume applies to a paused task`;
  if (action === "retry" && !FINAL_STATES.has(record.state))
    return `task ${record.key} is ${record.state}; retry applies to a task that ended (cancel it first)`;
  return undefined;
}
