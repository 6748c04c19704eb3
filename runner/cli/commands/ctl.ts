// `scifi ctl <run> limits|pause|resume`: a person's hand on a running run, from another shell or a
// machine sharing the run folder. Each decision is a file in the run folder (runner/run/session/control.ts)
// that the run's process applies: limits at once, a pause at the next phase boundary. Exit 0 done,
// 2 refused (unknown or ended run, a limit below what is used, nothing to pause or resume, a pause
// of a run check-task or eval started, limits of an eval trial); a resumed direct run exits as
// `scifi run` does (docs/ctl.md).
import { hostname } from "node:os";
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { visible } from "../../terminal-text.ts";

interface CtlFlags {
  iterations?: string;
  budgetUsd?: string;
  walltime?: string;
  wait?: boolean;
}

const ACTIONS = ["limits", "pause", "resume"] as const;

export function register(program: Command): void {
  program
    .command("ctl")
    .description("Change a running run's limits, pause it at the next phase boundary, or resume it")
    .argument("<run>", "run id (as under <home>/runs/), or a daemon task key")
    .argument("<action>", `one of: ${ACTIONS.join(", ")}`)
    .option("--iterations <n>", "limits: attempts per SAM node")
    .option("--budget-usd <usd>", "limits: the run's money cap")
    .option("--walltime <duration>", "limits: the run's wall time, e.g. 90m, 2h, 1:30:00")
    .option("--wait", "pause: wait until the run has paused (it pauses after its current phase)")
    .action(async (run: string, action: string, flags: CtlFlags) => {
      try {
        process.exitCode = await ctlCommand(run, action, flags);
      } catch (error) {
        process.stderr.write(`scifi ctl: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exitCode = error instanceof CtlRefused ? EXIT.usage : EXIT.failed;
      }
    });
}

/** What `scifi ctl` refuses (exit 2): the message says what and what to do. */
class CtlRefused extends Error {
  override name = "CtlRefused";
}

async function ctlCommand(given: string, action: string, flags: CtlFlags): Promise<number> {
  const { scifiHome } = await import("../../paths.ts");
  const { decider, writeDecision, readDecisions } = await import("../../run/session/control.ts");
  const home = scifiHome();
  if (!(ACTIONS as readonly string[]).includes(action))
    throw new CtlRefused(`unknown action '${action}'; actions: ${ACTIONS.join(", ")}`);
  const hasLimitFlags = flags.iterations ?? flags.budgetUsd ?? flags.walltime;
  if (action !== "limits" && hasLimitFlags !== undefined)
    throw new CtlRefused(`--iterations, --budget-usd and --walltime go with 'limits', not '${action}'`);
  const run = await findRun(home, given);
  const { folder, state, runId } = run;
  if (state.phase === "ended")
    throw new CtlRefused(
      `run ${runId} already ended (${state.outcome?.status ?? "no outcome"}${state.outcome ? `: ${state.outcome.reason}` : ""}); nothing to control`,
    );
  // A run check-task or eval started (and reads) takes no pause, and an eval trial no limits (a41d).
  const { starterRefusal } = await import("../../run/session/control.ts");
  const notForThisRun = starterRefusal(state, action as (typeof ACTIONS)[number]);
  if (notForThisRun) throw new CtlRefused(notForThisRun);
  const { runDriven } = await import("../../run/task-folder/run-lock.ts");
  const driven = runDriven(folder);
  const by = decider();
  const at = new Date().toISOString();
  const dir = folder.files.control;

  if (action === "limits") {
    const limits = await parseLimits(flags);
    const { limitsRefusal, iterationsUsed } = await import("../../run/session/control.ts");
    const { spentOnTape } = await import("../../audit/spent.ts");
    // The time since the checkpoint is measured only against this host's own clock: a run driven
    // on another host stamped `spent.at` with that host's clock, which may be hours off ours. There
    // the checkpoint's figure is what ctl checks, and the run checks the rest as it applies (a41d).
    const { readPidLock } = await import("../../pid-lock.ts");
    const driverHost = readPidLock(folder.files.lock)?.host;
    const remote = driverHost !== undefined && driverHost !== hostname();
    const sinceCheckpoint =
      driven && !remote && !state.paused && state.spent.at ? Date.now() - Date.parse(state.spent.at) : 0;
    const used = {
      iterations: iterationsUsed(state),
      // Every call is on the tape before it returns: the tape knows spend the checkpoint does not yet.
      usd: Math.max(state.spent.usd, spentOnTape(folder.files.audit).usd),
      elapsedMs: state.spent.elapsedMs + Math.max(0, sinceCheckpoint),
    };
    const refused = limitsRefusal(limits, used);
    if (refused) throw new CtlRefused(`run ${runId}: ${refused}`);
    // The limit must reach every consumer: the site policy, and a SLURM job holding the run (a41).
    const { siteRefusal, reachPlacementJob } = await import("../../run/session/ctl-reach.ts");
    const beyond = siteRefusal(home, limits, run.task !== undefined, state.sitePolicyFile);
    if (beyond) throw new CtlRefused(`run ${runId}: ${beyond}`);
    const job =
      limits.walltimeSec !== undefined
        ? await reachPlacementJob(home, runId, limits.walltimeSec).catch((e: Error) => {
            throw new CtlRefused(`run ${runId}: ${e.message}`);
          })
        : undefined;
    writeDecision(dir, { action: "limits", at, by, limits });
    const remoteClock =
      remote && limits.walltimeSec !== undefined
        ? `; it runs on ${driverHost}, whose clock is not this host's: the run checks the new wall time against the time it has run as it applies it`
        : "";
    const shown = Object.entries(limits)
      .map(([k, v]) => `${k} ${state.limits[k as keyof typeof limits]} → ${v}`)
      .join(", ");
    process.stdout.write(
      `run ${runId}: ${shown}${job ? `; ${job}` : ""}; ${driven ? "the run applies it within a second (on its history as a control event)" : "applied when the run resumes"}${remoteClock}\n`,
    );
    return EXIT.ok;
  }

  if (action === "pause") {
    if (state.paused) throw new CtlRefused(`run ${runId} is already paused (since ${state.paused.at})`);
    if (!driven)
      throw new CtlRefused(
        `run ${runId} is not running (no live process drives it); nothing to pause. ${run.task ? `Its daemon task is ${run.task.state}` : `Continue it with 'scifi run --resume ${runId}'`}`,
      );
    writeDecision(dir, { action: "pause", at, by });
    process.stdout.write(
      `run ${runId}: pause asked; it pauses after its current phase (sandboxes stopped)\n`,
    );
    if (!flags.wait) return EXIT.ok;
    const paused = await waitPaused(folder, runDriven);
    process.stdout.write(`run ${runId}: ${paused}\n`);
    return EXIT.ok;
  }

  // resume
  if (!state.paused) {
    // A pause asked for and not taken yet (the process may have ended before its boundary): the
    // resume withdraws it, now or when the run is continued.
    const pending = readDecisions(dir, state.controlApplied).some((d) => d.decision.action === "pause");
    if (!pending) throw new CtlRefused(`run ${runId} is not paused; nothing to resume`);
    writeDecision(dir, { action: "resume", at, by });
    process.stdout.write(
      driven
        ? `run ${runId}: the pause asked for is withdrawn before it was taken\n`
        : `run ${runId}: the pending pause is withdrawn (its process ended before taking it); continue it with ${run.task ? `the daemon (task ${run.task.key} is ${run.task.state})` : `'scifi run --resume ${runId}'`}\n`,
    );
    return EXIT.ok;
  }
  if (driven)
    throw new CtlRefused(`run ${runId} is paused but a process still holds it; wait for it to exit`);
  if (run.task) {
    // Everything that can refuse is asked before the decision is written: a decision is never taken back.
    const { refusal } = await import("../../daemon/control.ts");
    const refused = refusal(run.task, "resume");
    if (refused) throw new CtlRefused(`run ${runId}: ${refused}`);
  }
  // A run `scifi submit` placed goes back to SLURM (below); a folder another live run holds would
  // refuse its job on the node, in a log nobody reads: refused here, before the decision.
  const { listSubmissions, findRunState } = await import("../../jobs/placement.ts");
  const placed = run.task
    ? undefined
    : listSubmissions(home).find((r) => findRunState(home, r)?.runId === runId);
  if (placed) {
    const { refuseBusyTaskFolder, TaskFolderBusy } = await import("../../task-folder-lock.ts");
    const { dirname } = await import("node:path");
    try {
      refuseBusyTaskFolder(home, dirname(placed.samFile));
    } catch (error) {
      if (error instanceof TaskFolderBusy) throw new CtlRefused(`run ${runId}: ${error.message}`);
      throw error;
    }
  }
  writeDecision(dir, { action: "resume", at, by });
  if (run.task) {
    const { operate } = await import("../../daemon/operator.ts");
    const { record, via } = await operate(home, run.task.key, "resume");
    process.stdout.write(
      `run ${runId}: task ${record.key} ${record.state}${via === "direct" ? " (no daemon running: it resumes when the daemon starts)" : ""}\n`,
    );
    return EXIT.ok;
  }
  // A run `scifi submit` placed goes back to SLURM, with its job's options: never the login node.
  if (placed) {
    const { resubmitRun } = await import("../../jobs/submit.ts");
    try {
      const next = await resubmitRun(home, placed, runId);
      process.stdout.write(
        `run ${runId}: resumed as SLURM job ${next.jobId} (the options of job ${placed.jobId}: ${visible(placed.sbatchArgs.join(" "))})\n`,
      );
      return EXIT.ok;
    } catch (error) {
      process.stderr.write(
        `scifi ctl: run ${runId} was placed by scifi submit (job ${placed.jobId}), and sbatch refused its resume: ${visible(error instanceof Error ? error.message : String(error))}; the run stays paused: try 'scifi ctl ${runId} resume' again, or run 'scifi run --resume ${runId}' inside a SLURM allocation\n`,
      );
      return EXIT.failed;
    }
  }
  // A direct run continues here, in the foreground, exactly as `scifi run --resume <run>`.
  const { runCommand } = await import("./run.ts");
  return runCommand(undefined, { resume: runId });
}

async function findRun(home: string, given: string) {
  const { existsSync } = await import("node:fs");
  const { homePaths } = await import("../../paths.ts");
  const { openRunFolder } = await import("../../run-folder/folder.ts");
  const { readState } = await import("../../run-folder/state.ts");
  const { listTasks, readTask } = await import("../../daemon/records.ts");
  const { isRunName } = await import("../../run-id.ts");
  const tasks = listTasks(home);
  let runId = given;
  // A daemon task key names its last attempt's run.
  const byKey = isRunName(given) ? readTask(home, given) : undefined;
  if (!existsSync(openRunFolder(home, given).files.state) && byKey?.attempts.at(-1)?.runId)
    runId = byKey.attempts.at(-1)?.runId ?? given;
  if (!isRunName(runId)) throw new CtlRefused(`'${given}' is not a run id`);
  const folder = openRunFolder(home, runId);
  if (!existsSync(folder.files.state))
    throw new CtlRefused(
      `no run '${given}' under ${homePaths(home).runs} (no state.json there), and no daemon task of that name; 'scifi status' lists daemon tasks`,
    );
  const task = tasks.find((t) => t.attempts.some((a) => a.runId === runId));
  return { runId, folder, state: readState(folder.files.state), task };
}

async function parseLimits(flags: CtlFlags) {
  const { parseDuration, parseUsd } = await import("../../sam/units.ts");
  const limits: import("../../run/session/control.ts").ControlLimits = {};
  if (flags.iterations !== undefined) {
    const n = Number(flags.iterations);
    if (!Number.isInteger(n) || n < 1)
      throw new CtlRefused(`--iterations ${flags.iterations}: give a whole number of at least 1`);
    limits.iterations = n;
  }
  if (flags.budgetUsd !== undefined) {
    const usd = parseUsd(flags.budgetUsd);
    // Finite too: 310 nines parse to Infinity, which a decision file would hold as null.
    if (usd === undefined || !Number.isFinite(usd) || usd <= 0)
      throw new CtlRefused(`--budget-usd ${flags.budgetUsd}: give an amount in USD above 0, e.g. 2.50`);
    limits.usd = usd;
  }
  if (flags.walltime !== undefined) {
    const seconds = parseDuration(flags.walltime);
    if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0)
      throw new CtlRefused(`--walltime ${flags.walltime}: give a duration, e.g. 90m, 2h or 1:30:00`);
    limits.walltimeSec = seconds;
  }
  if (Object.keys(limits).length === 0)
    throw new CtlRefused("limits: give at least one of --iterations N, --budget-usd X, --walltime D");
  return limits;
}

/** Until the run's checkpoint says paused (or ended: then it ended before the boundary came). */
async function waitPaused(
  folder: import("../../run-folder/folder.ts").RunFolder,
  driven: (folder: import("../../run-folder/folder.ts").RunFolder) => boolean,
): Promise<string> {
  const { readState } = await import("../../run-folder/state.ts");
  for (;;) {
    const alive = driven(folder);
    const state = readState(folder.files.state);
    if (state.paused) return `paused after phase ${state.paused.phase}`;
    if (state.phase === "ended") return `ended ${state.outcome?.status} before it could pause`;
    if (!alive) return "its process stopped before it could pause (resume it with scifi run --resume)";
    await new Promise((r) => setTimeout(r, 250));
  }
}
