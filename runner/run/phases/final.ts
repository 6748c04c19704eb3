// The end of a run: `finish` sets the outcome and runs the final review, which writes task-group
// and global suggestions (a failed final review never changes the outcome); `closeRun`, the phase
// after it, records `run_end`.
import { runFinalReview } from "../../agents/final-review.ts";
import { RecordWriteFailed } from "../../atomic-write.ts";
import { promptMemory, readMemoryFile } from "../../memory/entries.ts";
import { readHistory } from "../../memory/history.ts";
import type { Outcome, Phase } from "../../run-folder/state.ts";
import { sha256 } from "../../sha256.ts";
import { writeSuggestions } from "../session/memory-writes.ts";
import { messageOf } from "../session/outcomes.ts";
import { recordRefusedRetry } from "../session/refused-retry.ts";
import type { RunSession } from "../session/session.ts";

export async function finish(session: RunSession, outcome: Outcome): Promise<Phase> {
  const { state, sam } = session;
  state.outcome = outcome;
  session.emit({ phase: "final_review" });
  // The file's text (its marks say where entries start); hashed as readMemory shows it whole.
  const taskMemory = readMemoryFile(session.folder.files.memory);
  try {
    const suggestions = await runFinalReview(
      session.model,
      {
        runId: state.runId,
        title: sam.root.title,
        outcome: outcome.status,
        reason: outcome.reason,
        iterations: state.iteration,
        // No group, no group memory: a run without `group:` writes none.
        group: sam.metadata.group ?? "(none)",
        taskMemory: {
          text: taskMemory,
          ref: `memory:task:${state.runId}`,
          sha256: sha256(promptMemory(taskMemory)),
        },
        history: readHistory(session.folder.files.history)
          .slice(-40)
          .map((e) => JSON.stringify(e))
          .join("\n"),
        controlRank: sam.metadata.rank?.control ?? 1,
        meta: session.meta(),
      },
      (response) => session.account(response),
      recordRefusedRetry(session, "final_review"),
    );
    await writeSuggestions(session, outcome, suggestions);
    session.history.append({
      type: "final_review",
      groupSuggestions: suggestions.group_suggestions.length,
      globalSuggestions: suggestions.global_suggestions.length,
    });
  } catch (error) {
    // A record that cannot be written (full disk) stops the run where it is, resumable.
    if (error instanceof RecordWriteFailed) throw error;
    // A failed final review must not change the outcome of the task; it is recorded instead.
    session.limit("final_review", messageOf(error));
  }
  return "final_review";
}

export async function closeRun(session: RunSession): Promise<Phase> {
  session.end(session.state.outcome ?? { status: "failed", reason: "no outcome" });
  return "ended";
}
