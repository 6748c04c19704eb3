// Checks: the runner's own checks of the node's subtree, in fresh sandboxes the agent never ran in,
// after the SAM files and check assets were put back from the runner's copies and every job of the
// agent's ended. Each run stage runs the agent's work in a sandbox of its own, stopped before the
// next check starts, on a throw-away view of the task folder of its own with the asset folders bound
// from the runner's copies (check-views.ts); its declared outputs are copied out of that view.
// Compare stages run in a folder the runner builds (run/stages.ts) and report pass or fail only.
import { join } from "node:path";
import type { CheckOutcome, Phase } from "../../run-folder/state.ts";
import { buildCheckAssets } from "../check-views.ts";
import { isCompare, type PlannedCheck, runChecks, subtreeChecks } from "../checks.ts";
import type { RunSession } from "../session.ts";
import { buildCompareFolder, StageOutputs } from "../stages.ts";

export async function checksPhase(session: RunSession): Promise<Phase> {
  const { state, taskFolder } = session;
  const node = session.node(session.plan().node);
  session.emit({ phase: "checks" });
  // The work sandbox is gone; so are the agent's jobs: nothing of the agent runs from here on.
  await session.endAgentWork("the checks begin");
  // A job that destroyed a start file after the agent's last call: put back and asked first.
  await session.gates.afterAgentJobs();
  taskFolder.restore();
  const notice = await taskFolder.linksNotice();
  const hidden = state.pristine.files.filter((f) => f.hidden).map((f) => f.rel);
  const outputs = new StageOutputs(
    join(session.folder.dir, "outputs", `it${state.iteration}`),
    hidden,
    (rel, why) =>
      session.recordIntegrity({
        kind: "output_refused",
        role: "work",
        call: null,
        attempted: `declared output ${JSON.stringify(rel)}: ${why}`,
        rule: "outputs are regular files, copied out as data; no format that names another file (trust.md rules 4 and 13)",
        action: "not copied out; the run stage fails",
      }),
  );
  const compareDir = join(session.folder.dir, "compare");
  const viewDir = taskFolder.checksCopyDir;
  const assetsDir = join(session.folder.dir, "check-assets");
  try {
    const shown: CheckOutcome[] = [];
    const record = (c: CheckOutcome) => {
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
        // No duration here: the history reaches prompts, which a replay must see unchanged; it is
        // in state.json (the finish request, the report), as is a compare stage's withheld output.
        ...(c.sandbox ? { sandbox: c.sandbox } : {}),
        ...(c.heldOutput ? { heldOutput: c.heldOutput } : {}),
      });
      session.result(checkResult(c));
    };
    let runs = 0;
    let compares = 0;
    for (const planned of subtreeChecks(node)) {
      if (isCompare(planned.check)) {
        // Each compare stage gets a folder and a sandbox of its own: what one leaves (a rewritten
        // reference, a process the agent's code started) never reaches the next.
        buildCompareFolder(compareDir, session.folder.files.pristine, state.pristine, outputs.dir);
        const phase = { stage: compares++, taskCopy: compareDir };
        await session.sandboxes.use("compare", phase, (sandbox) =>
          runChecks({
            sandbox,
            node,
            checks: [planned],
            signal: session.stop.signal,
            // Pass or fail only for the agents: the output may quote the reference.
            onCheck: (outcome) => record(taskFolder.withheld(outcome)),
          }),
        );
        continue;
      }
      // A view of the task folder as the work left it, and asset folders from the runner's copies,
      // both new for this check: nothing an earlier check wrote, renamed or planted is in them.
      const view = taskFolder.copyForChecks(viewDir);
      const viewShown = [view.kind, ...view.notUsed.map((why) => `(not ${why})`)].join(" ");
      buildCheckAssets(assetsDir, session.folder.files.pristine, state.pristine);
      const phase = { stage: runs++, taskCopy: viewDir, assets: assetsDir };
      await session.sandboxes.use("checks", phase, (sandbox) =>
        runChecks({
          sandbox,
          node,
          checks: [planned],
          notice,
          signal: session.stop.signal,
          afterCheck: (outcome, planned) => collectOutputs(outcome, planned, outputs, viewDir),
          onCheck: (outcome) => record({ ...outcome, view: viewShown }),
        }),
      );
      taskFolder.dropChecksCopy(viewDir);
    }
    state.checks = shown;
  } finally {
    taskFolder.dropChecksCopy(viewDir);
    taskFolder.dropChecksCopy(assetsDir);
    taskFolder.dropChecksCopy(compareDir);
  }
  // What the checks judged is what is delivered: verified again before a PASS.
  await session.taskFolder.recordDelivered();
  return "checks";
}

/** A run stage's declared outputs, copied out; one that is missing or refused fails the stage. */
function collectOutputs(
  outcome: CheckOutcome,
  planned: PlannedCheck,
  outputs: StageOutputs,
  fromDir: string,
): CheckOutcome {
  const declared = planned.check.outputs ?? [];
  if (declared.length === 0) return outcome;
  const problems = outputs.collect(fromDir, declared);
  if (problems.length === 0) return outcome;
  return {
    ...outcome,
    passed: false,
    output: `${outcome.output}\nscifi: ${problems.join("\nscifi: ")}`.trimStart(),
  };
}

/** One line for the live display: a check's result (piped output shows it as a line of its own). */
function checkResult(c: { id: string; passed: boolean; exitCode: number; timedOut?: boolean }): string {
  return `check ${c.id} ${c.passed ? "passed" : "FAILED"} (exit ${c.exitCode}${c.timedOut ? ", timed out" : ""})`;
}
