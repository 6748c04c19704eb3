// `scifi run <task>`: run a SAM to a verified Expectation in a sandbox, or `--resume <run>` one whose
// process died. Exit 0 passed, 1 failed, 3 blocked, 2 invalid input.
import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import type { Command } from "commander";
import { formatBytes, RecordWriteFailed } from "../../atomic-write.ts";
import { readTape } from "../../audit/verify.ts";
import { EXIT, exitCodeOfResult } from "../../exit-codes.ts";
import { readHistory } from "../../memory/history.ts";
import type { HistoryRecord } from "../../memory/history-events.ts";
import { runFiles } from "../../paths.ts";
import { likelyMismatches, loadCritiques } from "../../report/critique-html.ts";
import { failureFirst, failureLines } from "../../run-folder/failure.ts";
import { readSamJson } from "../../run-folder/folder.ts";
import type { SamNode } from "../../sam/types.ts";
import { exitCodeOf as signalExitCode } from "../../sandbox/live.ts";
import { writeQuietly } from "../../std-streams.ts";
import { visible, visibleJson } from "../../terminal-text.ts";

export interface RunFlags {
  backend?: string;
  model?: string;
  modelsConfig?: string;
  sitePolicy?: string;
  resume?: string;
  limit?: string[];
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command("run")
    .description(
      "Run a SAM task: pre-scan, work in the sandbox, checks and review, until verified or a limit is hit",
    )
    .argument("[task]", "SAM file, or a folder holding task.md")
    .option("--backend <name>", "sandbox backend: docker or apptainer (default docker)")
    .option(
      "--model <spec>",
      "model: scripted:FILE, scripted-openai:FILE, replay:RUN or a models config file",
    )
    .option("--models-config <file>", "models config YAML (default <home>/models.yaml)")
    .option("--site-policy <file>", "site policy YAML (default <home>/site-policy.yaml)")
    .option("--resume <run>", "continue the run with this id from its last completed phase")
    .option(
      "--limit <key=value...>",
      "override a limit default, e.g. --limit stepsPerPass=20 toolCallsPerStep=5 (keys: see docs/loop.md)",
    )
    .option(
      "--json",
      "print one JSON summary on stdout at the end (verdict, exit code, iterations, tokens, USD, paths)",
    )
    .action(async (task: string | undefined, flags: RunFlags) => {
      process.exitCode = await runCommand(task, flags);
    });
}

/**
 * In a terminal, a request is shown and may be decided right here (y/n; a denial asks for the
 * reason). `scifi approve`/`deny` from another shell still work; the first decision wins.
 */
async function terminalApproval(
  runId: string,
  request: import("../../approval/store.ts").ApprovalRequest,
  signal: AbortSignal,
  display: import("../../run/session/display.ts").StatusDisplay,
): Promise<{ approved: boolean; note?: string } | undefined> {
  const { createInterface } = await import("node:readline/promises");
  const { userInfo } = await import("node:os");
  const { visible } = await import("../../terminal-text.ts");
  // The live block leaves the screen while the question is asked, and comes back under the decision.
  display.suspend();
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const decided = (what: string, note: string | undefined) => {
    const at = new Date().toTimeString().slice(0, 5);
    display.say(`${what} by ${visible(userInfo().username)} at ${at}${note ? `: ${visible(note)}` : ""}`);
  };
  try {
    const { renderRequest } = await import("../../approval/render.ts");
    const { scifiHome } = await import("../../paths.ts");
    process.stderr.write(
      `\napproval request ${visible(request.id)}:\n${renderRequest(runId, request, { home: scifiHome() }).join("\n")}\n`,
    );
    for (;;) {
      const raw = (
        await rl.question(
          "approve? [y/n] (y: NOTE approves with a note; or decide later with scifi approve/deny) ",
          { signal },
        )
      ).trim();
      const answer = raw.toLowerCase();
      const yes = /^(y|yes)(?:\s*:\s*|\s+|$)/.exec(answer);
      if (yes) {
        const note = raw.slice(yes[0].length).trim() || undefined;
        decided(`approved ${visible(request.id)}`, note);
        return { approved: true, ...(note ? { note } : {}) };
      }
      if (answer === "n" || answer === "no") {
        const reason = (await rl.question("reason (the agent reads it): ", { signal })).trim();
        const note = reason || "denied in the terminal";
        decided(`denied ${visible(request.id)}`, note);
        return { approved: false, note };
      }
    }
  } catch (error) {
    // Decided elsewhere (scifi approve/deny from another shell) or timed out: the prompt is withdrawn,
    // saying by whom and when (the gate's reason), since whoever sits here did not decide it.
    if (signal.aborted) {
      const why = signal.reason instanceof Error ? signal.reason.message : undefined;
      display.say(
        `approval request ${visible(request.id)}: no longer asked here (${why ? visible(why) : "decided elsewhere, or its time ran out"})`,
      );
    }
    throw error;
  } finally {
    rl.close();
    display.resume();
  }
}

function pausedLine(result: import("../../run/session/deps.ts").RunResult): string {
  const paused = result.paused;
  return `PAUSED after phase ${paused?.phase} (${visible(paused?.reason ?? "")}); sandboxes stopped.\nrun ${result.runId}: continue it with 'scifi ctl ${result.runId} resume' (or 'scifi run --resume ${result.runId}')\nrecords: ${result.dir}/\n`;
}

/** `scifi run` (also `scifi ctl <run> resume` of a direct run: the same `--resume` path). */
export async function runCommand(task: string | undefined, flags: RunFlags): Promise<number> {
  const { scifiHome } = await import("../../paths.ts");
  // The loop's one wiring path (with the SLURM job tools when the SAM says `jobs: slurm`).
  const { exitCodeOf, InvalidInput, runErrorKind } = await import("../../run/session/errors.ts");
  const { runTask } = await import("../../run/setup.ts");
  const { RunLocked, TaskFolderBusy } = await import("../../run/task-folder/run-lock.ts");
  const { createDisplay } = await import("../../run/session/display.ts");
  if (task && flags.resume) return usage("give either a task or --resume RUN, not both");
  if (flags.resume) {
    const owner = await daemonOwner(scifiHome(), flags.resume);
    if (owner) return usage(owner);
  }
  if (flags.model && flags.modelsConfig) return usage("give either --model or --models-config, not both");
  const { parseLimitFlags } = await import("../../run/session/limits.ts");
  const limits = parseLimitFlags(flags.limit ?? []);
  if (typeof limits === "string") return usage(limits);
  const display = await createDisplay(process.stderr);
  let runDir: string | undefined;
  let report: { file?: string; index?: string; error?: string } | undefined;
  // A signal interrupts the run through its stop; the process exits once this command is done.
  const interrupt = new AbortController();
  let handled = () => {};
  const done = new Promise<void>((resolve) => {
    handled = resolve;
  });
  const releaseSignals = await ownSignals(() => runDir, interrupt, done);
  try {
    const result = await runTask({
      signal: interrupt.signal,
      home: scifiHome(),
      task,
      resume: flags.resume,
      backend: flags.backend,
      model: flags.model ?? flags.modelsConfig,
      sitePolicy: flags.sitePolicy,
      limits,
      onStatus: (status) => display.update(status),
      ...(process.stdin.isTTY && process.stderr.isTTY
        ? {
            approvalPrompt: (request, signal) =>
              terminalApproval(basename(runDir ?? ""), request, signal, display),
          }
        : {}),
      onReport: (written) => {
        report = written;
      },
      onRunId: (runId, dir) => {
        runDir = dir;
        process.stderr.write(`${flags.resume ? "resuming" : "run"} ${runId} (records: ${dir})\n`);
      },
    });
    display.done();
    const code = exitCodeOfResult(result);
    if (result.paused) {
      // Not an outcome: the run waits, checkpointed, for `scifi ctl <run> resume`.
      process.stdout.write(pausedLine(result));
      if (flags.json)
        process.stdout.write(
          `${visibleJson({ verdict: "paused", reason: result.paused.reason, exitCode: code, runId: result.runId, paths: { records: result.dir } })}\n`,
        );
      return code;
    }
    if (flags.json) {
      process.stderr.write(summary(result, flags.model) + reportLine(report));
      process.stdout.write(
        `${visibleJson({
          verdict: result.outcome.status,
          reason: result.outcome.reason,
          exitCode: code,
          runId: result.runId,
          iterations: result.iterations,
          tokens: result.spent.tokens,
          usd: result.spent.usd,
          elapsedMs: result.spent.elapsedMs,
          scripted: flags.model?.startsWith("scripted") === true,
          paths: {
            records: result.dir,
            audit: join(result.dir, "audit.jsonl"),
            ...(report?.file ? { report: report.file } : {}),
            ...(report?.index ? { index: report.index } : {}),
          },
        })}\n`,
      );
      return code;
    }
    process.stdout.write(summary(result, flags.model));
    process.stdout.write(reportLine(report));
    return code;
  } catch (error) {
    display.done();
    if (interrupt.signal.aborted) return interrupted(error, interrupt.signal.reason);
    if (report) process.stderr.write(reportLine(report));
    if (flags.json) {
      const code = exitCodeOf(error);
      process.stdout.write(
        `${visibleJson({
          verdict: "error",
          reason: error instanceof Error ? error.message : String(error),
          exitCode: code,
          ...(runDir
            ? {
                runId: runDir.split("/").pop(),
                paths: { records: runDir, ...(report?.file ? { report: report.file } : {}) },
              }
            : {}),
        })}\n`,
      );
    }
    if (error instanceof InvalidInput) {
      for (const d of error.diagnostics)
        process.stderr.write(`${d.file}:${d.line}:${d.column}: ${d.severity}: ${d.message}\n`);
    }
    if (exitCodeOf(error) === EXIT.usage)
      return usage(error instanceof Error ? error.message : String(error));
    if (error instanceof RunLocked || error instanceof TaskFolderBusy) {
      // Nothing was touched: no "records so far" hint, the run belongs to its live process. A busy
      // folder is refused input (exit 2, as the daemon's worker and an eval say it).
      process.stderr.write(`scifi run: ${error.message}\n`);
      return error instanceof TaskFolderBusy ? EXIT.usage : EXIT.failed;
    }
    if (error instanceof RecordWriteFailed) return recordWriteFailed(error, runDir);
    process.stderr.write(`scifi run: ${error instanceof Error ? error.message : String(error)}\n`);
    // A replay that diverged is not a run to continue: the task differs from the recorded one there.
    if (runErrorKind(error) === "replay") {
      if (runDir) process.stderr.write(`records of the replay: ${runDir}\n`);
      return EXIT.failed;
    }
    // A sandbox that did not start is not a run to continue: resuming starts it the same way.
    if (runErrorKind(error) === "start") {
      process.stderr.write(
        `the sandbox did not start; fix the cause above (scifi doctor checks the backend and its image), then run the task again${task ? `: scifi run ${task}` : ""}\n`,
      );
      if (runDir) process.stderr.write(`records of the attempt: ${runDir}\n`);
      return EXIT.failed;
    }
    if (runDir)
      process.stderr.write(
        `records so far: ${runDir}; continue with: scifi run --resume ${runDir.split("/").pop()}\n`,
      );
    return EXIT.failed;
  } finally {
    handled();
    releaseSignals();
  }
}

/**
 * SIGINT/SIGTERM/SIGHUP: the run's stop is aborted (RunInterrupted), so the run ends through its
 * own exit (task folder restored, hidden assets back, check views taken down) with no outcome, every
 * live sandbox is stopped, and the process exits 128+n once `done` (this command has said how it
 * ended; sandbox/live.ts waits 20 s at most). The run needs no extra checkpoint: the last completed
 * phase is already on disk, and `--resume` continues from it. The run owns these signals (other
 * listeners, e.g. lock cleanup, defer to an owner), so it must end the process.
 */
async function ownSignals(
  runDir: () => string | undefined,
  interrupt: AbortController,
  done: Promise<void>,
): Promise<() => void> {
  const live = await import("../../sandbox/live.ts");
  const { RunInterrupted } = await import("../../run-ending.ts");
  return live.ownSignals({
    interrupt: (signal) => {
      interrupt.abort(new RunInterrupted(signal));
      return done;
    },
    announce: (signal) => {
      const dir = runDir();
      const resume = dir ? ` continue with: scifi run --resume ${dir.split("/").pop()}` : "";
      writeQuietly(process.stderr, `\nscifi run: ${signal}: stopping the sandbox;${resume}\n`);
    },
  });
}

/**
 * How an interrupted run ended: 128+n (the process exits with it in any case, sandbox/live.ts). An
 * error other than the interruption itself (one its abort caused outside the driver, or one of the
 * run's exit) is said, since the task folder may need a look.
 */
function interrupted(error: unknown, reason: unknown): number {
  const signal = (reason as { signal?: NodeJS.Signals }).signal ?? "SIGTERM";
  if (error !== reason)
    writeQuietly(
      process.stderr,
      `scifi run: ${signal}: while stopping: ${error instanceof Error ? error.message : String(error)}\n`,
    );
  // The resume command was in the announcement already.
  writeQuietly(process.stderr, `scifi run: ${signal}: the run stopped unfinished\n`);
  return signalExitCode(signal);
}

/**
 * A record (tape, history, state, memory) could not be written: a full disk, as a rule. The file
 * is named with the space it needs; every record ends with a whole line, so once there is space
 * the run resumes from its last checkpoint.
 */
function recordWriteFailed(error: RecordWriteFailed, runDir: string | undefined): number {
  process.stderr.write(`scifi run: ${error.message}\n`);
  const resume = runDir ? `scifi run --resume ${runDir.split("/").pop()}` : "scifi run --resume <run id>";
  const records = runDir ? `records so far: ${runDir}; ` : "";
  if (!error.rolledBack)
    process.stderr.write(
      `${records}run 'scifi audit verify' on the run before resuming: ${error.file} may end with a partial record\n`,
    );
  else if (error.noSpace)
    process.stderr.write(
      `${records}free space on the disk holding ${error.file} (at least ${formatBytes(error.shortBy)} more; the run will write more after this record), then continue with: ${resume}\n`,
    );
  else process.stderr.write(`${records}fix the cause above, then continue with: ${resume}\n`);
  return EXIT.failed;
}

/** Where the run's report page is (written at the run's end), or why it is not there. */
function reportLine(report: { file?: string; index?: string; error?: string } | undefined): string {
  if (!report) return "";
  if (report.error) return `report: not written (${report.error}); rebuild with: scifi report <run>\n`;
  return `report: ${report.file}${report.index ? ` (all runs: ${report.index})` : ""}\n`;
}

/**
 * Why `--resume <run>` is not this command's to do: the run is a daemon task's that has not ended
 * (queued, running or paused), so the daemon owns it; resumed here, the task's record would never
 * learn its run went on.
 */
async function daemonOwner(home: string, runId: string): Promise<string | undefined> {
  const { listTasks, FINAL_STATES } = await import("../../daemon/records.ts");
  const task = listTasks(home).find((t) => t.attempts.at(-1)?.runId === runId);
  if (!task || FINAL_STATES.has(task.state)) return undefined;
  // The daemon's own SLURM job for this attempt (a paused placed task resumed: runner/daemon/
  // placed.ts) drives the run. The daemon records the job id once sbatch answers, which a fast job
  // can outrun: an attempt whose job is still being submitted is waited for, briefly.
  const job = process.env.SLURM_JOB_ID;
  if (job) {
    const { readTask } = await import("../../daemon/records.ts");
    for (let waited = 0; waited <= 15_000; waited += 250) {
      // Only a task the daemon has placed and not paused or ended: a paused task's last attempt
      // still names the job that ended when it paused, which is never the one to go on (a38d).
      const record = readTask(home, task.key);
      if (record?.state !== "running") break;
      const placed = record.attempts.at(-1)?.slurm?.jobId;
      if (placed === job) return undefined;
      if (placed) break;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const how =
    task.state === "paused"
      ? `continue it with 'scifi ctl ${task.key} resume' (the daemon runs it again, or its next start does)`
      : "the daemon drives it; 'scifi status' shows it, 'scifi cancel' stops it";
  return `run ${runId} belongs to daemon task ${task.key} (${task.state}); ${how}`;
}

function usage(message: string): number {
  process.stderr.write(`scifi run: ${message}\n`);
  return EXIT.usage;
}

/** How a replay went, from its tape's `replay_end` event: recorded answers used and left over. */
function replayed(dir: string): string {
  try {
    const end = readTape(join(dir, "audit.jsonl"), { tolerant: true })
      .filter((r) => r.kind === "event" && r.event === "replay_end")
      .at(-1);
    const data = (end?.kind === "event" ? end.data : undefined) as
      | { answered: number; recorded: number; unused: number }
      | undefined;
    if (!data) return "no replay summary on the tape";
    return `${data.answered} of ${data.recorded} recorded calls answered, no divergence${data.unused > 0 ? `; ${data.unused} recorded call(s) never asked for` : ""}`;
  } catch (error) {
    return `replay summary unreadable: ${(error as Error).message}`;
  }
}

/** The morning-after line's critique count: verified likely mismatches left, unverified findings. */
function critiqueCount(dir: string): string {
  const critiques = loadCritiques(dir);
  if (critiques.records.length === 0) return "";
  const { likely, unverified } = likelyMismatches(critiques.records);
  return ` [critique: ${likely} likely mismatch(es)${unverified ? `, ${unverified} unverified finding(s)` : ""}]`;
}

function summary(result: import("../../run/session/deps.ts").RunResult, model: string | undefined): string {
  const dir = result.dir;
  // Only the records that exist (a run that wrote no task memory has no memory.md).
  const files = ["state.json", "history.jsonl", "audit.jsonl", "memory.md", "sam.md", "spec.json"].filter(
    (f) => existsSync(join(dir, f)),
  );
  // A scripted run must never pass for a real one: say so next to the verdict.
  const scripted = model?.startsWith("scripted")
    ? ` [SCRIPTED model: replies come from ${model.slice(model.indexOf(":") + 1)}]`
    : model?.startsWith("replay:")
      ? ` [REPLAY of ${model.slice("replay:".length)}: ${replayed(dir)}]`
      : "";
  const history = safeHistory(join(dir, "history.jsonl"));
  // Why it failed comes right under the verdict: the failed checks with their output, the items.
  const failure = result.outcome.status === "passed" ? undefined : failureFirst(history, safeSam(dir), dir);
  return [
    // The reason may be the agent's report_blocker text: shown escaped, as every listing is.
    `${result.outcome.status.toUpperCase()}: ${visible(result.outcome.reason)}${critiqueCount(result.dir)}${scripted}`,
    ...(failure ? failureLines(failure) : []),
    `run ${result.runId}: ${iterationsText(result.iterations, history)}, ${result.spent.tokens} tokens, USD ${result.spent.usd.toFixed(4)}, ${Math.round(result.spent.elapsedMs / 1000)} s`,
    `records: ${dir}/ (${files.join(", ")})`,
    `inspect: scifi audit show ${dir}`,
    "",
  ].join("\n");
}

/** "3 iterations, none failed (one per node)": a passing tree's count does not read like retries. */
function iterationsText(iterations: number, history: readonly HistoryRecord[]): string {
  const ends = history.filter((e) => e.type === "iteration_end");
  const failed = ends.filter((e) => e.type === "iteration_end" && !e.passed).length;
  const count = `${iterations} iteration${iterations === 1 ? "" : "s"}`;
  if (ends.length === 0 || iterations <= 1) return count;
  return failed === 0 ? `${count}, none failed (one per node)` : `${count}, ${failed} failed`;
}

function safeHistory(file: string): HistoryRecord[] {
  try {
    return existsSync(file) ? readHistory(file) : [];
  } catch {
    return [];
  }
}

function safeSam(dir: string): SamNode | undefined {
  try {
    return readSamJson({ dir, files: runFiles(dir) }).root;
  } catch {
    return undefined;
  }
}
