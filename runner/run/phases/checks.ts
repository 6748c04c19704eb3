// Checks: the runner's own checks of the node's subtree, in fresh sandboxes the agent never ran in,
// after the SAM files and check assets were put back from the runner's copies and every job of the
// agent's ended. Each run stage runs the agent's work in a sandbox of its own, stopped before the
// next check starts, on a throw-away view of the task folder of its own with the asset folders bound
// from the runner's copies (check-views.ts); its declared outputs are copied out of that view.
// Compare stages run in a folder the runner builds (run/checks/stages.ts) and report pass or fail only.
import { join } from "node:path";
import type { CheckOutcome, Phase } from "../../run-folder/state.ts";
import type { Sandbox } from "../../sandbox/types.ts";
import { awaitedLater, runAhead } from "../checks/ahead.ts";
import { ASSET_FOLDERS } from "../checks/check-view.ts";
import { buildCheckAssets } from "../checks/check-views.ts";
import { isCompare, type PlannedCheck, runChecks, subtreeChecks } from "../checks/checks.ts";
import { buildCompareFolder, StageOutputs } from "../checks/stages.ts";
import type { RunSession } from "../session/session.ts";

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
  // Two of each: the run stage running and the next one, made ready while it runs.
  const slots: Slot[] = taskFolder.checksCopyDirs.map((view, i) => ({
    view,
    assets: join(session.folder.dir, ASSET_FOLDERS[i] as string),
  }));
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
    // A view of the task folder as the work left it, and asset folders from the runner's copies,
    // both new for each run stage: nothing an earlier check wrote, renamed or planted is in them.
    // The next run stage's are made, and its sandbox started, while this one runs (ahead.ts).
    const prepare = (planned: PlannedCheck): ReadyStage | undefined => {
      if (isCompare(planned.check)) return undefined;
      const slot = slots[runs % slots.length] as Slot;
      const view = taskFolder.copyForChecks(slot.view);
      const viewShown = [view.kind, ...view.notUsed.map((why) => `(not ${why})`)].join(" ");
      buildCheckAssets(slot.assets, session.folder.files.pristine, state.pristine);
      const phase = { stage: runs++, taskCopy: slot.view, assets: slot.assets };
      return { slot, viewShown, phase, sandbox: awaitedLater(session.sandboxes.open("checks", phase)) };
    };
    await runAhead(subtreeChecks(node), {
      ahead: (_current, next) => !isCompare(next.check),
      prepare,
      discard: async (ready) => {
        if (!ready) return;
        await session.sandboxes.discard(ready.sandbox, "checks");
        taskFolder.dropChecksCopy(ready.slot.view);
      },
      run: async (planned, ready) => {
        if (!ready) {
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
          return;
        }
        const { slot, viewShown } = ready;
        await session.sandboxes.use(
          "checks",
          ready.phase,
          (sandbox) =>
            runChecks({
              sandbox,
              node,
              checks: [planned],
              notice,
              signal: session.stop.signal,
              afterCheck: (outcome, planned) => collectOutputs(outcome, planned, outputs, slot.view),
              onCheck: (outcome) => record({ ...outcome, view: viewShown }),
            }),
          ready.sandbox,
        );
        taskFolder.dropChecksCopy(slot.view);
      },
    });
    state.checks = shown;
  } finally {
    for (const slot of slots) {
      taskFolder.dropChecksCopy(slot.view);
      taskFolder.dropChecksCopy(slot.assets);
    }
    taskFolder.dropChecksCopy(compareDir);
  }
  // What the checks judged is what is delivered: verified again before a PASS.
  await session.taskFolder.recordDelivered();
  return "checks";
}

/** Where one run stage's view and asset folders go; two, used in turn. */
interface Slot {
  view: string;
  assets: string;
}

/** A run stage made ready: its view and asset folders built, its sandbox starting. */
interface ReadyStage {
  slot: Slot;
  viewShown: string;
  phase: { stage: number; taskCopy: string; assets: string };
  sandbox: Promise<Sandbox>;
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
