// The phase table: the last completed phase (state.json's `phase`) names the one that runs next. A
// resumed run starts here too. To add a phase: a file exporting `(session) => Promise<Phase>`, a
// `Phase` value for it in the run-folder state, and its row below (docs/architecture.md).
import type { Phase } from "../run-folder/state.ts";
import { checksPhase } from "./phases/checks.ts";
import { critiquePhase } from "./phases/critique.ts";
import { closeRun } from "./phases/final.ts";
import { endIteration } from "./phases/iteration-end.ts";
import { beginIteration } from "./phases/prescan.ts";
import { reviewPhase } from "./phases/review.ts";
import { workPhase } from "./phases/work.ts";
import type { RunSession } from "./session/session.ts";

/** Runs one phase; returns the phase it completed (checkpointed by the driver). */
export type PhaseStep = (session: RunSession) => Promise<Phase>;

const AFTER: Record<Phase, PhaseStep> = {
  created: beginIteration,
  iteration_end: beginIteration,
  prescan: workPhase,
  work: checksPhase,
  checks: reviewPhase,
  review: critiquePhase,
  critique: endIteration,
  final_review: closeRun,
  ended: async () => "ended",
};

export function nextPhase(completed: Phase): PhaseStep {
  return AFTER[completed];
}
