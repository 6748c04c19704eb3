// How a task ends without a local worker's exit to read (a SLURM job left its live states, a person
// refused its start, the placement failed): its state and reason, the `end` log line, the site's
// onFinish hook, and a look at the queue for the next task.
import type { DaemonCore } from "./context.ts";
import { now } from "./context.ts";
import { runHook } from "./hook.ts";
import { FINAL_STATES, lastAttempt, type TaskRecord } from "./records.ts";
import { readRunState } from "./spend.ts";

export function finishTask(
  core: DaemonCore,
  record: TaskRecord,
  state: TaskRecord["state"],
  reason: string,
): void {
  const attempt = lastAttempt(record);
  if (attempt && !attempt.endedAt) attempt.endedAt = now();
  record.state = state;
  record.reason = reason;
  core.save(record);
  const run = attempt?.runId ? readRunState(core.home, attempt.runId) : undefined;
  core.log("end", {
    task: record.key,
    run: attempt?.runId,
    job: attempt?.slurm?.jobId,
    state,
    reason,
    usd: run?.spent.usd,
    iterations: run?.iteration,
  });
  const hook = core.site.onFinish;
  if (hook && FINAL_STATES.has(state))
    void runHook(core.home, hook, record).then((exit) => core.log("on_finish", { task: record.key, exit }));
  core.schedule();
}
