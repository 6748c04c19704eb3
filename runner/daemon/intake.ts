// What comes into the daemon from outside: SAMs dropped, edited or removed in the inbox, and the
// operator's cancel and retry requests (runner/daemon/control.ts). Each turns into a change of the
// task's record, and a look at the queue when something may start.
import { copyFileSync } from "node:fs";
import type { DaemonCore, Live } from "./context.ts";
import { type ControlRequest, newRecord, refusal, requeue, resumePaused } from "./control.ts";
import { clearRejection, type InboxEntry, sha256File } from "./inbox.ts";
import { removeTask, type TaskRecord } from "./records.ts";

/** Stops a running attempt on the operator's cancel (a local worker, or a job placed on SLURM). */
export type CancelLive = (record: TaskRecord, live: Live) => void;

export class Intake {
  readonly #core: DaemonCore;
  readonly #cancel: CancelLive;

  constructor(core: DaemonCore, cancel: CancelLive) {
    this.#core = core;
    this.#cancel = cancel;
  }

  /** A SAM settled in the inbox: a new task, or an edit of a known one. */
  onTask(entry: InboxEntry): void {
    const core = this.#core;
    if (core.stopping) return;
    const record = core.records.get(entry.key);
    if (!record) {
      const created = newRecord(core.home, entry);
      core.records.set(created.key, created);
      core.save(created);
      core.log(created.state, { task: created.key, ...(created.reason ? { reason: created.reason } : {}) });
      core.schedule();
      return;
    }
    let hash: string;
    try {
      hash = sha256File(entry.source);
    } catch {
      return; // removed again meanwhile
    }
    if (hash === record.sha256) return;
    if (record.state === "queued" || record.state === "rejected") {
      requeue(record, core.home);
      core.save(record);
      core.log(record.state === "queued" ? "requeued_after_edit" : "rejected", {
        task: record.key,
        ...(record.reason ? { reason: record.reason } : {}),
      });
      core.schedule();
    } else if (record.state === "running") {
      // The loop's tamper check sees the change (a single-file task's run reads the copy, so the
      // edit is carried over to it) and fails the run as tampering.
      if (record.kind === "file") copyFileSync(record.source, record.samFile);
      core.log("edited_while_running", { task: record.key });
    } else {
      core.log("edited_after_end", {
        task: record.key,
        state: record.state,
        hint: `scifi retry ${record.key}`,
      });
    }
  }

  /**
   * A SAM left the inbox: a task that has not run yet is cancelled; a rejected one (it never could
   * run) is forgotten, with its `.rejected.txt`, so status no longer lists it.
   */
  onRemoved(entry: InboxEntry): void {
    const record = this.#core.records.get(entry.key);
    if (record?.state === "rejected") {
      clearRejection(record.source);
      this.#core.records.delete(record.key);
      removeTask(this.#core.home, record.key);
      this.#core.log("removed", { task: record.key, reason: "the rejected SAM was removed from the inbox" });
      return;
    }
    if (record?.state !== "queued") return;
    record.state = "cancelled";
    record.reason = "the SAM was removed from the inbox before it ran";
    this.#core.save(record);
    this.#core.log("cancelled", { task: record.key, reason: record.reason });
  }

  /** `scifi cancel` / `scifi retry` left a request for the running daemon. */
  onRequest(request: ControlRequest): void {
    const core = this.#core;
    const record = core.records.get(request.key);
    if (!record) {
      core.log("request_unknown_task", { task: request.key, action: request.action });
      return;
    }
    const refused = refusal(record, request.action);
    if (refused) {
      core.log("request_refused", { task: record.key, action: request.action, reason: refused });
      return;
    }
    if (request.action === "resume") {
      resumePaused(record);
      core.save(record);
      core.log("resume_requested", { task: record.key, run: record.resumeRunId });
      core.schedule();
      return;
    }
    if (request.action === "retry") {
      requeue(record, core.home);
      core.save(record);
      core.log("retry", { task: record.key, state: record.state });
      return;
    }
    const live = core.live.get(record.key);
    if (live) {
      this.#cancel(record, live);
      return;
    }
    record.reason =
      record.state === "paused"
        ? "cancelled by the operator while paused (its run keeps its checkpoint)"
        : "cancelled by the operator before it ran";
    record.state = "cancelled";
    delete record.resumeRunId;
    core.save(record);
    core.log("cancelled", { task: record.key });
  }
}
