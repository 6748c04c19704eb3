// The run's driver, in the shape of mini-swe-agent's run -> step loop: ask the phase table for the
// phase that follows the last completed one, run it, checkpoint; an error that ends runs (RunEnding)
// becomes the run's outcome, and so does a host-side step that failed on the task folder's content
// (task-folder-problem.ts); anything else propagates (the run stays resumable from its checkpoint).
import { RunCancelled, RunEnding } from "../run-ending.ts";
import { nextPhase } from "./phases.ts";
import type { RunSession } from "./session.ts";
import { taskFolderProblem } from "./task-folder-problem.ts";

export async function drive(session: RunSession): Promise<void> {
  while (session.state.phase !== "ended") await step(session);
}

async function step(session: RunSession): Promise<void> {
  const cancelled = cancelOf(session);
  if (cancelled) return session.endWith(cancelled);
  try {
    const completed = await nextPhase(session.state.phase)(session);
    session.checkpoint(completed);
  } catch (error) {
    // A cancel aborts what was under way (a model call, a command): whatever that threw, the run
    // ends cancelled, not resumable on an abort error.
    const cancel = cancelOf(session);
    if (cancel) return session.endWith(cancel);
    // A host-side step that failed on what the agent left in the task folder: the task's failure.
    const unusable = taskFolderProblem(error, [session.spec.taskDir, session.taskFolder.checksCopyDir]);
    if (unusable) return session.endWith(unusable);
    if (!(error instanceof RunEnding)) throw error;
    session.endWith(error as Error);
  }
}

function cancelOf(session: RunSession): RunCancelled | undefined {
  const signal = session.deps.signal;
  return signal?.aborted && signal.reason instanceof RunCancelled ? signal.reason : undefined;
}
