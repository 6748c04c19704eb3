// Attempts and the local workers that run them: an attempt is started (or resumed from its
// checkpoint) as a worker process (runner/daemon/worker.ts), tracked until the process exits, and
// then ended by what the run's own checkpoint says; without an outcome it is queued to resume.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { runDir, runFiles } from "../paths.ts";
import { newRunId } from "../run-id.ts";
import { type DaemonCore, type Live, now } from "./context.ts";
import { requeue } from "./control.ts";
import { runHook } from "./hook.ts";
import { sha256File } from "./inbox.ts";
import { signalWorker, spawnWorker, waitForExit } from "./process.ts";
import { type Attempt, daemonPaths, FINAL_STATES, lastAttempt, type TaskRecord } from "./records.ts";
import { readRunState } from "./spend.ts";

/** A worker that died this many times without ending its run makes the task fail. */
const MAX_RESUMES = 3;

/** Hands an attempt to SLURM instead of a local worker (daemon placement `slurm`). */
export type PlaceAttempt = (record: TaskRecord, attempt: Attempt) => void;

/** How long a cancelled worker has to end its run as cancelled before it is stopped. */
const CANCEL_GRACE_MS = 60_000;

export class Workers {
  readonly #core: DaemonCore;
  readonly #place: PlaceAttempt | undefined;

  /**
   * `place`: set when tasks are placed on SLURM; a new attempt then goes there, and so does the
   * resume of a placed one (a local attempt's resume stays local).
   */
  constructor(core: DaemonCore, place?: PlaceAttempt) {
    this.#core = core;
    this.#place = place;
  }

  /** Starts (or resumes) an attempt; false when the SAM changed since it was queued. */
  begin(record: TaskRecord): boolean {
    const core = this.#core;
    const resumeId = record.resumeRunId;
    const resumable = resumeId !== undefined && existsSync(runFiles(runDir(core.home, resumeId)).state);
    let attempt = lastAttempt(record);
    if (resumable && attempt?.runId === resumeId) {
      attempt.resumes++;
    } else {
      if (!this.#freshSam(record)) return false;
      attempt = {
        n: record.attempts.length + 1,
        // Approved to start: the run takes the id its request was made under.
        runId:
          record.runApproval?.approved && !record.attempts.some((a) => a.runId === record.runApproval?.runId)
            ? record.runApproval.runId
            : newRunId(record.name ?? record.key),
        startedAt: now(),
        resumes: 0,
      };
      record.attempts.push(attempt);
    }
    delete record.resumeRunId;
    delete record.reason;
    record.state = "running";
    delete attempt.pid;
    if (this.#place && (!resumable || attempt.slurm)) {
      // The run id is chosen by `scifi run` on the node; it is recorded once its state file appears.
      // A placed run paused by `scifi ctl` goes back to SLURM to resume (never a local worker).
      if (!resumable) attempt.runId = "";
      attempt.slurm = { jobId: "", submitDir: "" };
      core.save(record);
      this.#place(record, attempt);
      return true;
    }
    // Recorded before the spawn: a crash in between leaves a run id that recovery looks for in /proc.
    core.save(record);
    const worker = spawnWorker(
      {
        home: core.home,
        runId: attempt.runId,
        ...(resumable ? {} : { samFile: record.samFile }),
        backend: core.options.backend,
        model: core.options.model,
        sitePolicy: core.options.sitePolicy,
      },
      daemonPaths(core.home).log(record.key, attempt.n),
    );
    attempt.pid = worker.pid;
    core.save(record);
    core.log(resumable ? "resume" : "start", {
      task: record.key,
      run: attempt.runId,
      attempt: attempt.n,
      pid: worker.pid,
    });
    this.#track(
      record,
      attempt,
      worker.pid,
      false,
      worker.exited.then((e) => e.code),
    );
    return true;
  }

  /** A live worker a previous daemon started: watched until it exits, then ended as any other. */
  adopt(record: TaskRecord, attempt: Attempt, pid: number): void {
    this.#track(
      record,
      attempt,
      pid,
      true,
      waitForExit(pid, attempt.runId).then(() => undefined),
    );
  }

  /** The worker finished while no daemon watched: its outcome is recorded, nothing resumes. */
  endedUnwatched(record: TaskRecord, attempt: Attempt): void {
    void this.#end(
      record,
      attempt,
      { pid: 0, runId: attempt.runId, adopted: true, done: Promise.resolve() },
      null,
    );
  }

  /**
   * `scifi cancel` of a running worker: SIGUSR2 ends its run `cancelled` (restored, reported, lock
   * released); a worker still there after the grace gets SIGTERM (stopped, checkpoint kept).
   */
  cancel(record: TaskRecord, live: Live): void {
    live.cancelling = true;
    try {
      process.kill(live.pid, "SIGUSR2");
    } catch {
      // already gone
    }
    const force = setTimeout(() => {
      if (this.#core.live.get(record.key) === live) signalWorker(live.pid, "SIGTERM");
    }, CANCEL_GRACE_MS);
    force.unref();
    void live.done.then(() => clearTimeout(force));
    this.#core.log("cancelling", { task: record.key, run: live.runId, pid: live.pid });
  }

  /** The task waits in the queue to continue this attempt from its checkpoint. */
  toResume(record: TaskRecord, attempt: Attempt, why: string): void {
    record.state = "queued";
    record.resumeRunId = attempt.runId;
    record.reason = why;
    delete attempt.pid;
    this.#core.save(record);
    this.#core.log("resume_pending", { task: record.key, run: attempt.runId, reason: why });
  }

  /** The SAM the run will read is still the one validated at queue time (a single-file task gets its copy now). */
  #freshSam(record: TaskRecord): boolean {
    const ok = existsSync(record.source) && sha256File(record.source) === record.sha256;
    if (ok && record.kind === "file") {
      mkdirSync(dirname(record.samFile), { recursive: true });
      copyFileSync(record.source, record.samFile);
      if (sha256File(record.samFile) === record.sha256) return true;
    } else if (ok) {
      return true;
    }
    requeue(record, this.#core.home);
    this.#core.save(record);
    this.#core.log(record.state === "queued" ? "requeued_after_edit" : "rejected", { task: record.key });
    return false;
  }

  #track(
    record: TaskRecord,
    attempt: Attempt,
    pid: number,
    adopted: boolean,
    exited: Promise<number | null | undefined>,
  ): void {
    const live: Live = { pid, runId: attempt.runId, adopted, done: Promise.resolve() };
    live.done = exited.then((code) => this.#end(record, attempt, live, code ?? null));
    this.#core.live.set(record.key, live);
  }

  /** The worker is gone: the run's own checkpoint says how it ended; without an outcome it resumes. */
  async #end(record: TaskRecord, attempt: Attempt, live: Live, code: number | null): Promise<void> {
    const core = this.#core;
    core.live.delete(record.key);
    attempt.endedAt = now();
    attempt.exitCode = code;
    delete attempt.pid;
    const log = daemonPaths(core.home).log(record.key, attempt.n);
    const state = readRunState(core.home, attempt.runId);
    if (state?.phase === "ended" && state.outcome) {
      record.state = state.outcome.status;
      record.reason = state.outcome.reason;
    } else if (state?.paused && !live.cancelling) {
      // Paused (scifi ctl): the slot is free; `scifi ctl <run> resume` queues it again.
      record.state = "paused";
      record.reason = `paused after phase ${state.paused.phase} (${state.paused.reason}); continue it with 'scifi ctl ${attempt.runId} resume'`;
      core.save(record);
      core.log("paused", { task: record.key, run: attempt.runId, phase: state.paused.phase });
      core.schedule();
      return;
    } else if (live.cancelling) {
      record.state = "cancelled";
      record.reason = "cancelled by the operator while it ran (checkpoint kept)";
    } else if (core.stopping) {
      this.toResume(record, attempt, "the daemon stopped; it resumes from its checkpoint on the next start");
      return;
    } else if (code === 2 || !state) {
      record.state = "failed";
      record.reason = `the run could not start: ${logTail(log)}`;
    } else if (code !== null && code < 128) {
      // The worker exited by itself without an outcome: an error in the run, which a resume would repeat.
      record.state = "failed";
      record.reason = `the run stopped with an error (exit ${code}): ${logTail(log)}`;
    } else if (attempt.resumes < MAX_RESUMES) {
      this.toResume(record, attempt, `the worker died (exit ${code ?? "?"}) before the run ended`);
      core.schedule();
      return;
    } else {
      record.state = "failed";
      record.reason = `the worker died ${attempt.resumes + 1} times before the run ended; see ${log}`;
    }
    core.save(record);
    core.log("end", {
      task: record.key,
      run: attempt.runId,
      state: record.state,
      reason: record.reason,
      usd: state?.spent.usd,
      iterations: state?.iteration,
    });
    if (core.site.onFinish && FINAL_STATES.has(record.state)) {
      const exit = await runHook(core.home, core.site.onFinish, record);
      core.log("on_finish", { task: record.key, exit });
    }
    core.schedule();
  }
}

function logTail(file: string): string {
  if (!existsSync(file)) return "no worker log";
  const lines = readFileSync(file, "utf8").trim().split("\n");
  return lines.slice(-3).join(" | ") || "empty worker log";
}
