// Pre-scan: a new iteration starts (after the `run` gate, before anything runs); the control model
// reads the SAM, task memory, the bounded group and global memory views and the history tail, and
// picks the node, the work rank, the skills and the direction.
import { type PrescanPlan, runPrescan } from "../../agents/prescan.ts";
import { MalformedReply } from "../../agents/structured.ts";
import { promptMemory, readMemoryFile } from "../../memory/entries.ts";
import type { HistoryEvent } from "../../memory/history-events.ts";
import type { Phase } from "../../run-folder/state.ts";
import { sha256 } from "../../sha256.ts";
import { recordRefusedRetry } from "../session/refused-retry.ts";
import { rankRange } from "../session/sam-limits.ts";
import type { RunSession } from "../session/session.ts";
import { memoryViewEvents, type SharedMemory, sharedMemory } from "../session/shared-memory.ts";
import { finish } from "./final.ts";

export async function beginIteration(session: RunSession): Promise<Phase> {
  const { state, sam, history } = session;
  // `approval: [run]`: before the first iteration a person says the task may start (nothing runs yet).
  if (state.iteration === 0) {
    const refused = await session.gates.mayStart();
    if (refused) {
      session.end({ status: "blocked", reason: refused });
      return "ended";
    }
  }
  state.iteration++;
  state.plan = undefined;
  state.work = undefined;
  state.checks = undefined;
  state.verdict = undefined;
  history.append({ type: "iteration_start", iteration: state.iteration });
  session.emit({ iteration: state.iteration, phase: "prescan" });
  const taskMemoryText = readMemoryFile(session.folder.files.memory);
  // Group and global memory as bounded views (runner/memory/view.ts). A replay reads shared memory
  // as the recorded run did: nothing written since it started.
  const before = session.model.memoryAsOf;
  const shared = sharedMemory(session.home, sam.metadata.group, session.deps.memoryTokens, before);
  for (const event of memoryViewEvents(shared, state.iteration, before)) history.append(event);
  let plan: PrescanPlan;
  try {
    plan = await prescan(session, new Set(state.completeNodes), taskMemoryText, shared);
  } catch (error) {
    if (!(error instanceof MalformedReply)) throw error;
    return failedPrescan(session, error.message);
  }
  if (state.direction && state.direction !== plan.direction) {
    history.append({
      type: "direction_change",
      iteration: state.iteration,
      from: state.direction,
      to: plan.direction,
    });
  }
  state.direction = plan.direction;
  state.plan = plan;
  const added = plan.skills.filter((name) => !(session.deps.skills?.granted ?? []).includes(name));
  history.append({
    type: "prescan",
    iteration: state.iteration,
    node: plan.node,
    rank: plan.rank,
    skills: plan.skills,
    direction: plan.direction,
    ...(added.length > 0 ? { addedSkills: added } : {}),
  });
  return "prescan";
}

function prescan(
  session: RunSession,
  complete: ReadonlySet<string>,
  taskMemoryText: string,
  shared: SharedMemory,
): Promise<PrescanPlan> {
  const { state, sam, deps } = session;
  const { group, global } = shared;
  return runPrescan(
    session.model,
    {
      root: sam.root,
      complete,
      iteration: state.iteration,
      rank: { ...rankRange(sam), suggested: state.workRank },
      controlRank: sam.metadata.rank?.control ?? 1,
      // The file's text (its marks say where entries start); hashed as readMemory shows it whole.
      taskMemory: {
        text: taskMemoryText,
        ref: `memory:task:${state.runId}`,
        sha256: sha256(promptMemory(taskMemoryText)),
      },
      groupMemory: group
        ? { group: group.group, text: group.view.text, ref: group.ref, sha256: group.sha256 }
        : undefined,
      globalMemory: { text: global.view.text, ref: global.ref, sha256: global.sha256 },
      // The memory views are in the prompt already; their records would only repeat them.
      history: session.history
        .tail(20)
        .filter((event) => event.type !== "memory_view")
        .map((event) => JSON.stringify(briefEvent(event)))
        .join("\n"),
      skillIndex: deps.skills?.index ?? "(no skills available for this task)",
      skillNames: deps.skills?.names ?? [],
      grantedSkills: deps.skills?.granted ?? [],
      meta: session.meta(),
    },
    (response) => session.account(response),
    recordRefusedRetry(session, "prescan"),
  );
}

/** The planner sees the end of a check's output; the whole tail is in the task memory and the report. */
function briefEvent(event: HistoryEvent): HistoryEvent {
  if (event.type !== "check" || !event.output) return event;
  return { ...event, output: event.output.split("\n").slice(-5).join("\n") };
}

/** A pre-scan without a valid plan (after its one retry) fails the iteration, not the run. */
async function failedPrescan(session: RunSession, reason: string): Promise<Phase> {
  const { state, limits } = session;
  const key = "(pre-scan)";
  state.attempts[key] = (state.attempts[key] ?? 0) + 1;
  session.history.append({
    type: "iteration_end",
    iteration: state.iteration,
    passed: false,
    reason,
    audit: session.audit.anchor(),
  });
  if ((state.attempts[key] ?? 0) >= limits.iterations) {
    return finish(session, {
      status: "failed",
      reason: `iteration limit reached: ${limits.iterations} pre-scans without a valid plan (last: ${reason})`,
    });
  }
  return "iteration_end";
}
