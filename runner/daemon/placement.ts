// Tasks the daemon places on SLURM (placement `slurm`): each attempt is submitted as one job
// (runner/daemon/placed.ts), watched until it leaves SLURM's live states, and ended by the run's
// own outcome, or failed with the job's last output lines.
import type { SlurmClient } from "../jobs/slurm.ts";
import { type DaemonCore, errorText, type Live, now } from "./context.ts";
import { finishTask } from "./ending.ts";
import { jobLogTail, type PlacedJob, submitPlaced, watchPlaced } from "./placed.ts";
import type { Attempt, TaskRecord } from "./records.ts";
import { readRunState } from "./spend.ts";

export class SlurmPlacement {
  readonly #core: DaemonCore;

  constructor(core: DaemonCore) {
    this.#core = core;
  }

  /** Tracks a task placed on SLURM: submits it (unless adopted with its job), watches the job, records the end. */
  place(record: TaskRecord, attempt: Attempt): void {
    const live: Live = { pid: 0, runId: attempt.runId, adopted: false, done: Promise.resolve() };
    this.#core.live.set(record.key, live);
    live.done = this.#run(record, attempt, live).catch((error: unknown) => {
      this.#core.live.delete(record.key);
      finishTask(this.#core, record, "failed", `SLURM placement failed: ${errorText(error)}`);
    });
  }

  /** `scifi cancel` of a placed task: scancel its job (or, while sbatch still runs, once it answers). */
  cancel(record: TaskRecord, live: Live): void {
    live.cancelling = true;
    if (live.jobId) void this.#scancel(live.jobId);
    this.#core.log("cancelling", { task: record.key, job: live.jobId ?? "not submitted yet" });
  }

  async #run(record: TaskRecord, attempt: Attempt, live: Live): Promise<void> {
    const core = this.#core;
    const { SlurmClient } = await import("../jobs/slurm.ts");
    const slurm = new SlurmClient({ timeoutMs: 30_000 });
    let job: PlacedJob | undefined = attempt.slurm?.jobId ? attempt.slurm : undefined;
    if (!job) {
      job = await submitPlaced({
        home: core.home,
        samFile: record.samFile,
        backend: core.options.backend,
        model: core.options.model,
        ...(attempt.runId ? { resumeRunId: attempt.runId } : {}),
      });
      attempt.slurm = { ...job };
      core.save(record);
      core.log("submitted", { task: record.key, attempt: attempt.n, job: job.jobId });
    }
    live.jobId = job.jobId;
    // A cancel that came while sbatch ran.
    if (live.cancelling) await this.#scancel(job.jobId);
    const status = await watchPlaced(core.home, job, slurm, {
      pollMs: core.options.slurmPollMs ?? 2000,
      stopped: () => core.stopping,
      onStatus: (s) => this.#seen(record, attempt, live, s.slurm?.state, s.run?.runId),
    });
    core.live.delete(record.key);
    if (!status) return; // the daemon stopped: the job runs on, the next start adopts it
    attempt.endedAt = now();
    const outcome = status.run?.outcome;
    const paused = !outcome && attempt.runId ? readRunState(core.home, attempt.runId)?.paused : undefined;
    if (outcome) finishTask(core, record, outcome.status as TaskRecord["state"], outcome.reason);
    else if (paused && !live.cancelling) {
      // Paused (scifi ctl): no slot held; `resume` queues it again (a new job continues the run).
      record.state = "paused";
      record.reason = `paused after phase ${paused.phase} (${paused.reason}); continue it with 'scifi ctl ${attempt.runId} resume'`;
      core.save(record);
      core.log("paused", { task: record.key, run: attempt.runId, job: job.jobId, phase: paused.phase });
      core.schedule();
    } else if (live.cancelling)
      finishTask(core, record, "cancelled", `cancelled by the operator (scancel ${job.jobId})`);
    else
      finishTask(
        core,
        record,
        "failed",
        `SLURM job ${job.jobId} ended ${status.slurm?.state ?? "(forgotten by SLURM)"} without a run outcome: ${jobLogTail(job)}`,
      );
  }

  /** Records the job's SLURM state and the node's run id as they change (the status file shows them). */
  #seen(record: TaskRecord, attempt: Attempt, live: Live, state?: string, runId?: string): void {
    if (!attempt.slurm) return;
    const changed =
      (state !== undefined && state !== attempt.slurm.state) || (runId && runId !== attempt.runId);
    if (!changed) return;
    if (state) attempt.slurm.state = state;
    if (runId) {
      attempt.runId = runId;
      live.runId = runId;
    }
    this.#core.save(record);
    this.#core.log("slurm_state", {
      task: record.key,
      job: attempt.slurm.jobId,
      state: attempt.slurm.state,
      run: runId,
    });
  }

  async #scancel(jobId: string): Promise<void> {
    const { SlurmClient } = await import("../jobs/slurm.ts");
    const slurm: SlurmClient = new SlurmClient({ timeoutMs: 30_000 });
    await slurm.scancel([jobId]).catch((error: unknown) => {
      this.#core.log("scancel_failed", { job: jobId, error: errorText(error) });
    });
  }
}
