// Checks: the runner's own checks of the node's subtree, in fresh sandboxes the agent never ran in,
// after the SAM files and check assets were put back from the runner's copies. With hidden assets
// they run on a throw-away copy of the task folder, and only the checks marked `hidden` see them.
import type { CheckOutcome, Phase } from "../../run-folder/state.ts";
import { groupByHidden, runChecks, subtreeChecks } from "../checks.ts";
import type { RunSession } from "../session.ts";

export async function checksPhase(session: RunSession): Promise<Phase> {
  const { state, taskFolder } = session;
  const node = session.node(session.plan().node);
  session.emit({ phase: "checks" });
  // The work sandbox is gone: nothing of the agent runs while the runner restores and checks.
  taskFolder.restore();
  const notice = taskFolder.linksNotice();
  // What the agent's code writes while a check runs on the copy never reaches the real folder.
  const checkDir = session.hiddenCount > 0 ? taskFolder.checksCopyDir : undefined;
  try {
    if (checkDir) taskFolder.copyForChecks(checkDir);
    const shown: CheckOutcome[] = [];
    for (const [index, group] of groupByHidden(subtreeChecks(node)).entries()) {
      const seesHidden = checkDir !== undefined && group.hidden;
      if (checkDir) taskFolder.showHidden(checkDir, seesHidden);
      const phase = { name: `checks${index > 0 ? `.${index + 1}` : ""}`, taskCopy: checkDir, seesHidden };
      await session.sandboxes.use("checks", phase, (sandbox) =>
        runChecks({
          sandbox,
          node,
          checks: group.checks,
          notice,
          signal: session.toolContext.signal,
          onCheck: (outcome) => {
            const c = seesHidden ? taskFolder.withheld(outcome) : outcome;
            shown.push(c);
            session.history.append({
              type: "check",
              iteration: state.iteration,
              node: c.node ?? node.id,
              check: c.id,
              passed: c.passed,
              exitCode: c.exitCode,
              ...(c.timedOut ? { timedOut: true } : {}),
              output: c.output,
            });
            session.result(checkResult(c));
          },
        }),
      );
    }
    state.checks = shown;
  } finally {
    if (checkDir) taskFolder.dropChecksCopy(checkDir);
  }
  // `approval: [delete]`: the agent's code a check ran in the task folder may have removed start files.
  if (!checkDir) await session.gates.afterChecksInTaskFolder();
  return "checks";
}

/** One line for the live display: a check's result (piped output shows it as a line of its own). */
function checkResult(c: { id: string; passed: boolean; exitCode: number; timedOut?: boolean }): string {
  return `check ${c.id} ${c.passed ? "passed" : "FAILED"} (exit ${c.exitCode}${c.timedOut ? ", timed out" : ""})`;
}
