// The run's driver, in the shape of mini-swe-agent's run -> step loop: ask the phase table for the
// phase that follows the last completed one, run it, checkpoint; an error that ends runs (RunEnding)
// becomes the run's outcome, anything else propagates (the run stays resumable from its checkpoint).
import { RunEnding } from "../run-ending.ts";
import { nextPhase } from "./phases.ts";
import type { RunSession } from "./session.ts";

export async function drive(session: RunSession): Promise<void> {
  while (session.state.phase !== "ended") await step(session);
}

async function step(session: RunSession): Promise<void> {
  try {
    const completed = await nextPhase(session.state.phase)(session);
    session.checkpoint(completed);
  } catch (error) {
    if (!(error instanceof RunEnding)) throw error;
    session.endWith(error as Error);
  }
}
