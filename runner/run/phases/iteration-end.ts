// End of an iteration: a passed node is complete (the root's pass goes through the `finish` gate);
// a failed one writes what was tried and what to fix into task memory, moves the work rank by the
// review's adjustment, and the next iteration starts unless a limit or a blocker ends the run.
import type { Phase } from "../../run-folder/state.ts";
import { writeFailureMemory } from "../session/memory-writes.ts";
import { failureReason } from "../session/outcomes.ts";
import { clampRank, rankRange } from "../session/sam-limits.ts";
import type { RunSession } from "../session/session.ts";
import { finish } from "./final.ts";

export async function endIteration(session: RunSession): Promise<Phase> {
  const { state, sam, history, limits } = session;
  const verdict = state.verdict;
  const node = session.node(session.plan().node);
  if (verdict?.passed) {
    state.completeNodes.push(node.id);
    history.append({ type: "node_complete", iteration: state.iteration, node: node.id });
    history.append({
      type: "iteration_end",
      iteration: state.iteration,
      passed: true,
      audit: session.audit.anchor(),
    });
    if (node.id !== sam.root.id) return "iteration_end";
    // The PASS covers the folder the checks judged; a person confirms that folder, and only that.
    const changed = await session.taskFolder.deliveredChanges();
    if (changed) return finish(session, { status: "failed", reason: changed });
    const denied = await session.gates.confirmPass();
    if (denied !== undefined) return finish(session, { status: "failed", reason: denied });
    const changedWhileAsked = await session.taskFolder.deliveredChanges();
    if (changedWhileAsked) return finish(session, { status: "failed", reason: changedWhileAsked });
    return finish(session, { status: "passed", reason: "every check and review item passed" });
  }
  state.attempts[node.id] = (state.attempts[node.id] ?? 0) + 1;
  await writeFailureMemory(session, node);
  if (verdict) state.workRank = clampRank(state.workRank + verdict.rank_adjustment, rankRange(sam));
  const reason = failureReason(state);
  history.append({
    type: "iteration_end",
    iteration: state.iteration,
    passed: false,
    reason,
    audit: session.audit.anchor(),
  });
  if (verdict?.blocked)
    return finish(session, {
      status: "blocked",
      reason: `the review asked for a human: ${verdict.blocked.reason}`,
    });
  if ((state.attempts[node.id] ?? 0) >= limits.iterations) {
    session.limit("iterations", `${limits.iterations} failed attempts at ${node.id}`);
    return finish(session, {
      status: "failed",
      reason: `iteration limit reached: ${limits.iterations} failed attempts at node ${node.id} (last: ${reason})`,
    });
  }
  return "iteration_end";
}
