// Work: the work agent's pass on the planned node, with its tools in a fresh sandbox of its own
// (stopped when the pass ends, whatever happens). A blocker, a stall, a spent budget or a task
// folder over its quota end the run; otherwise the checks come next.
import { hiddenChecksNote } from "../../agents/prompt.ts";
import { parentOf } from "../../agents/tree.ts";
import { blockerNudge, workBrief, workSystem } from "../../agents/work.ts";
import { extensionTools } from "../../extension/run-extension.ts";
import type { Phase } from "../../run-folder/state.ts";
import type { QuotaExceeded } from "../../sandbox/types.ts";
import { workTools } from "../../tools/registry.ts";
import { runPass } from "../session/conversation.ts";
import { exitReason } from "../session/outcomes.ts";
import type { RunSession } from "../session/session.ts";
import { finish } from "./final.ts";

export async function workPhase(session: RunSession): Promise<Phase> {
  const { state, sam, deps } = session;
  const plan = session.plan();
  const node = session.node(plan.node);
  session.emit({ phase: "work", node: node.id, step: 0, toolCalls: 0 });
  // The SAM's skills are the grant; the plan's (checked against the index) come after them.
  const skillNames = [...new Set([...(deps.skills?.granted ?? []), ...plan.skills])];
  const skills = skillNames.map((name) => ({
    name,
    ...(deps.skills?.text(name) ?? { text: "", sha256: "" }),
  }));
  let overQuota: QuotaExceeded | undefined;
  const deletion = session.gates.deletionGuard();
  const result = await session.sandboxes.use("work", {}, async (sandbox) => {
    const pass = await runPass({
      model: session.model,
      tools: new Map([...workTools, ...extensionTools(deps.extensions).map((t) => [t.name, t] as const)]),
      toolContext: { ...session.toolContext, sandbox },
      limits: session.limits,
      budget: session.budget,
      request: {
        role: "work",
        kind: "work",
        rank: plan.rank,
        system: workSystem(),
        injected: skills.map((s) => ({ kind: "skill" as const, ref: `skill:${s.name}`, sha256: s.sha256 })),
        meta: session.meta(),
      },
      brief:
        workBrief(node, parentOf(sam.root, node.id), plan, skills) + hiddenChecksNote(session.hiddenCount),
      textReply: "nudge",
      blockerNudge,
      onEvent: (event) => session.onPassEvent(event),
      signal: session.stop.signal,
      ...(deletion ? { afterTool: () => deletion.afterTool(sandbox) } : {}),
    });
    // Over the task-folder quota when the pass ended: the agent did not clean up after the
    // refused tool calls, so the run ends (the checks would only fill the disk further).
    overQuota = sandbox.quotaExceeded?.();
    return pass;
  });
  // A removal after the agent's last call (a background process), found with the sandbox stopped.
  await deletion?.afterPass();
  const exit = result.exit;
  state.work = {
    exit: exit.type,
    claim: exit.type === "done" ? exit.claim : undefined,
    summary: exit.type === "done" ? exit.summary : exitReason(exit),
    steps: result.steps,
    toolCalls: result.toolCalls,
  };
  session.history.append({
    type: "work_end",
    iteration: state.iteration,
    node: node.id,
    exit: exit.type,
    steps: result.steps,
    toolCalls: result.toolCalls,
  });
  if (exit.type === "blocker") {
    return finish(session, {
      status: "blocked",
      reason: `the work agent reported a blocker: ${exit.reason} (needs: ${exit.needs})`,
    });
  }
  if (exit.type === "stalled") {
    return finish(session, { status: "blocked", reason: `the work agent kept failing: ${exit.reason}` });
  }
  if (exit.type === "budget") {
    session.end({ status: "failed", reason: exit.reason });
    return "ended";
  }
  if (overQuota) {
    session.limit("quota", overQuota.message);
    return finish(session, { status: "failed", reason: `task-folder quota: ${overQuota.message}` });
  }
  return "work";
}
