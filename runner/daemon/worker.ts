// One daemon attempt: start (or resume) a run with a run id chosen by the daemon, through the same
// wiring as `scifi run` (runner/run/setup.ts runTask). The daemon needs the id before the process
// starts, so a crash at any moment leaves a run it can find and resume; `scifi run` picks its own id,
// hence this entry. A `jobs: slurm` task gets its job tools there, and its jobs are cancelled when
// the run ends or the worker gets SIGTERM (`scifi cancel`, daemon stop) through sandbox/live.ts.
// Exit codes as `scifi run` (runner/exit-codes.ts, exitCodeOf).
import { parseArgs } from "node:util";
import { EXIT, exitCodeOfOutcome } from "../exit-codes.ts";
import { exitCodeOf, InvalidInput } from "../run/session/errors.ts";
import { runTask } from "../run/setup.ts";
import { RunCancelled, RunInterrupted } from "../run-ending.ts";
import { ownSignals as takeSignals } from "../sandbox/live.ts";
import { writeQuietly } from "../std-streams.ts";
import { visible } from "../terminal-text.ts";

const { values } = parseArgs({
  options: {
    home: { type: "string" },
    "run-id": { type: "string" },
    sam: { type: "string" },
    backend: { type: "string" },
    model: { type: "string" },
    "site-policy": { type: "string" },
  },
});

/**
 * SIGTERM (daemon stop) and SIGINT: the run is interrupted (RunInterrupted: it ends through its own
 * exit, task folder restored and hidden assets back, with no outcome), the sandbox stopped and the
 * task's SLURM jobs cancelled (both are in sandbox/live.ts, whose signal policy this process takes),
 * then exit 128+n; the last completed phase is on disk for a resume. The worker must own these
 * signals: other listeners (lock cleanup) defer to an owner, so without one the process would live
 * on until the current model call returned.
 */
function ownSignals(): void {
  takeSignals({
    interrupt: (signal) => {
      interrupt.abort(new RunInterrupted(signal));
      return ran;
    },
    announce: (signal) =>
      writeQuietly(process.stderr, `worker: ${signal}: stopping the sandbox and the task's jobs\n`),
  });
}

async function main(): Promise<number> {
  const home = values.home;
  const runId = values["run-id"];
  if (!home || !runId) {
    process.stderr.write("worker: --home and --run-id are required\n");
    return EXIT.usage;
  }
  try {
    const result = await runTask({
      home,
      ...(values.sam ? { task: values.sam, runId } : { resume: runId }),
      backend: values.backend,
      model: values.model,
      sitePolicy: values["site-policy"],
      signal: AbortSignal.any([cancel.signal, interrupt.signal]),
      onReport: (report) =>
        process.stdout.write(report.file ? `report: ${report.file}\n` : `report: ${report.error}\n`),
    });
    if (result.paused) {
      process.stdout.write(`paused after phase ${result.paused.phase}: ${visible(result.paused.reason)}\n`);
      return EXIT.paused;
    }
    process.stdout.write(`${result.outcome.status}: ${visible(result.outcome.reason)}\n`);
    return exitCodeOfOutcome(result.outcome);
  } catch (error) {
    if (error instanceof InvalidInput) {
      for (const d of error.diagnostics)
        process.stderr.write(`${d.file}:${d.line}:${d.column}: ${d.severity}: ${d.message}\n`);
    }
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return exitCodeOf(error);
  }
}

const interrupt = new AbortController();
ownSignals();
// `scifi cancel` (SIGUSR2, to this process alone): the run ends `cancelled` through its own exit,
// so the task folder is restored, the report written and the lock released (SIGTERM, the daemon's
// stop, leaves it resumable instead).
const cancel = new AbortController();
process.on("SIGUSR2", () => {
  process.stderr.write("worker: SIGUSR2: cancelling the run\n");
  cancel.abort(new RunCancelled("cancelled by the operator while it ran"));
});
const ran = main();
const code = await ran;
process.exitCode = code;
// A handle left open after an error (a model server, a socket) must not keep a finished worker
// alive: the daemon waits for its exit. Records are flushed before runTask returns.
setTimeout(() => process.exit(code), 10_000).unref();
