// What a daemon finds at start from the one before it (killed, crashed, or stopped): each task left
// `running` is adopted when its worker (or SLURM job) still lives, recorded when its run ended
// meanwhile, or queued to resume from its checkpoint; then the orphan sandboxes of dead runs go.
import type { DaemonCore } from "./context.ts";
import { errorText } from "./context.ts";
import type { SlurmPlacement } from "./placement.ts";
import { findWorker, isWorkerOf } from "./process.ts";
import { lastAttempt, listTasks, writeTask } from "./records.ts";
import { readRunState } from "./spend.ts";
import type { Workers } from "./workers.ts";

/** Records from disk; a `running` task whose worker lives is adopted, else it waits to resume. */
export function recover(core: DaemonCore, workers: Workers, placement: SlurmPlacement): void {
  for (const record of listTasks(core.home)) {
    core.records.set(record.key, record);
    if (record.state !== "running") continue;
    const attempt = lastAttempt(record);
    if (!attempt) {
      record.state = "queued";
      writeTask(core.home, record);
      continue;
    }
    if (attempt.slurm) {
      core.log("adopt", { task: record.key, job: attempt.slurm.jobId });
      placement.place(record, attempt);
      continue;
    }
    const pid = isWorkerOf(attempt.pid, attempt.runId) ? attempt.pid : findWorker(attempt.runId);
    if (pid) {
      attempt.pid = pid;
      writeTask(core.home, record);
      core.log("adopt", { task: record.key, run: attempt.runId, pid });
      workers.adopt(record, attempt, pid);
    } else if (readRunState(core.home, attempt.runId)?.phase === "ended") {
      workers.endedUnwatched(record, attempt);
    } else {
      workers.toResume(record, attempt, "its worker died with the previous daemon");
    }
  }
}

/** Removes sandboxes no live run owns (the backend's prune spares those of live processes). */
export async function pruneSandboxes(core: DaemonCore): Promise<void> {
  try {
    const { getBackend } = await import("../sandbox/registry.ts");
    const backend = await getBackend(core.options.backend ?? "docker");
    const live = new Set([...core.live.values()].map((w) => w.runId));
    const removed = await backend.prune({ home: core.home, liveRunIds: live });
    if (removed.length) core.log("pruned", { sandboxes: removed });
    // The checks' views (overlay mounts) of runs that died with a worker.
    const { pruneCheckViews } = await import("../run/check-view.ts");
    const views = pruneCheckViews(core.home, live);
    if (views.length) core.log("pruned", { views });
  } catch (error) {
    core.log("prune_failed", { error: errorText(error) });
  }
}
