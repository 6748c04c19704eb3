// The run's driver, in the shape of mini-swe-agent's run -> step loop: ask the phase table for the
// phase that follows the last completed one, run it, checkpoint; an error that ends runs (RunEnding)
// becomes the run's outcome, and so does a host-side step that failed on the task folder's content
// (task-folder-problem.ts); anything else propagates (the run stays resumable from its checkpoint).
// Between phases it reads a person's decisions (scifi ctl): a pause asked for is taken there.
// A signal (RunInterrupted) is no outcome: it propagates, and the phase it cut is not checkpointed.
import { interruptionOf, RunEnding } from "../run-ending.ts";
import { nextPhase } from "./phases.ts";
import type { RunSession } from "./session/session.ts";
import { taskFolderProblem } from "./task-folder/task-folder-problem.ts";

export async function drive(session: RunSession): Promise<void> {
  while (session.state.phase !== "ended") {
    throwIfInterrupted(session);
    session.control.poll();
    const pause = session.stop.pauseRequested;
    if (pause && !session.stop.ending()) return session.pause(pause);
    await step(session);
  }
}

async function step(session: RunSession): Promise<void> {
  // A cancel or the deadline, between phases: the run ends with it.
  const stopped = session.stop.ending();
  if (stopped) return session.endWith(stopped);
  try {
    const completed = await nextPhase(session.state.phase)(session);
    // A phase a signal cut short may have finished on what the stop broke (a killed check): redone.
    throwIfInterrupted(session);
    session.checkpoint(completed);
  } catch (error) {
    // A signal: whatever the abort made the phase throw, the run stops unfinished, resumable.
    throwIfInterrupted(session);
    // A cancel or the deadline aborts what was under way (a model call, a command): whatever that
    // threw, the run ends with the stop's reason, not resumable on an abort error.
    const ending = session.stop.ending();
    if (ending) return session.endWith(ending);
    // A host-side step that failed on what the agent left in the task folder: the task's failure.
    const unusable = taskFolderProblem(error, [session.spec.taskDir, ...session.taskFolder.checksCopyDirs]);
    if (unusable) return session.endWith(unusable);
    if (!(error instanceof RunEnding)) throw error;
    session.endWith(error as Error);
  }
}

function throwIfInterrupted(session: RunSession): void {
  const interrupted = interruptionOf(session.stop.signal);
  if (interrupted) throw interrupted;
}
