// `approval: [run]` (SAM or site) in the daemon: the task is asked for before any worker starts. The
// request goes into the folder of a run id reserved for the task, and is the same question the run
// itself asks (runStartRequest), so the run started under that id finds the decision instead of
// asking again. Approved, the task starts; denied or timed out, it ends blocked with no run.
import { mkdirSync } from "node:fs";
import { ApprovalGate, ApprovalTimedOut, runStartRequest } from "../approval/gate.ts";
import { runDir } from "../paths.ts";
import type { DaemonPlacement } from "../policy/site.ts";
import { newRunId } from "../run-id.ts";
import { requiredActions } from "../sam/approval-actions.ts";
import { type DaemonCore, errorText } from "./context.ts";
import { finishTask } from "./ending.ts";
import type { TaskRecord } from "./records.ts";

interface Asking {
  runId: string;
  abort: AbortController;
  gate: ApprovalGate;
}

export class RunApproval {
  readonly #core: DaemonCore;
  readonly #placement: DaemonPlacement;
  /** Queued tasks whose `run` approval is being asked now, by task key. */
  readonly #asking = new Map<string, Asking>();

  constructor(core: DaemonCore, placement: DaemonPlacement) {
    this.#core = core;
    this.#placement = placement;
  }

  /** The task may start only once a person approved it. */
  requires(record: TaskRecord): boolean {
    // A task placed on SLURM gets its run id on the node: its run asks there, in its job.
    if (this.#placement === "slurm") return false;
    return requiredActions(record.approval, this.#core.site.approvalRequired).includes("run");
  }

  /** Asks for the task's start (once: a question already open is left to its answer). */
  ask(record: TaskRecord): void {
    const core = this.#core;
    if (this.#asking.has(record.key)) return;
    if (!record.runApproval) {
      record.runApproval = { runId: newRunId(record.name ?? record.key) };
      core.save(record);
    }
    const runId = record.runApproval.runId;
    mkdirSync(runDir(core.home, runId), { recursive: true, mode: 0o700 });
    const abort = new AbortController();
    const poll = Number(process.env.SCIFI_APPROVAL_POLL_MS);
    const gate = new ApprovalGate({
      home: core.home,
      runId,
      required: ["run"],
      siteRequired: core.site.approvalRequired ?? [],
      timeoutSec: record.approvalTimeoutSec ?? core.site.approvalTimeoutSec,
      ...(core.site.onApproval ? { onApproval: core.site.onApproval } : {}),
      pollMs: poll > 0 ? poll : 500,
      signal: abort.signal,
    });
    this.#asking.set(record.key, { runId, abort, gate });
    core.log("awaiting_approval", { task: record.key, run: runId, action: "run" });
    const current = () => record.state === "queued" && record.runApproval?.runId === runId;
    gate
      .ask(runStartRequest({ name: record.name, samFile: record.samFile }), { once: true })
      .then(
        (answer) => {
          if (!current() || !record.runApproval) return;
          if (answer.approved) {
            record.runApproval.approved = true;
            core.save(record);
            core.log("approved", { task: record.key, run: runId, who: answer.decision.who });
            core.schedule();
            return;
          }
          const d = answer.decision;
          finishTask(
            core,
            record,
            "blocked",
            `a person (${d.who}) did not let the task start: ${d.note ?? "no reason given"}`,
          );
        },
        (error: unknown) => {
          if (abort.signal.aborted || !current()) return;
          if (error instanceof ApprovalTimedOut) finishTask(core, record, "blocked", error.message);
          else core.log("approval_error", { task: record.key, error: errorText(error) });
        },
      )
      .finally(() => {
        if (this.#asking.get(record.key)?.runId === runId) this.#asking.delete(record.key);
      });
  }

  /** A task that left the queue (cancelled, removed, edited) while its `run` request waited: withdrawn. */
  dropStale(): void {
    for (const [key, asking] of this.#asking) {
      const record = this.#core.records.get(key);
      if (record?.state === "queued" && record.runApproval?.runId === asking.runId) continue;
      asking.abort.abort();
      this.#asking.delete(key);
      asking.gate.withdrawPending("the task left the queue before it started");
    }
  }

  /** The daemon stops: the questions stay pending in the run folders; the next daemon takes them up. */
  stopAsking(): void {
    for (const asking of this.#asking.values()) asking.abort.abort();
  }
}
