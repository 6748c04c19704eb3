// What a run's setup throws and how it becomes an exit code; what stopped a run without an outcome,
// recorded in the run folder's error.json for the report.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { EXIT } from "../exit-codes.ts";
import { SubmitInputError } from "../jobs/submit.ts";
import { ModelsConfigError } from "../llm/config.ts";
import { ReplayDivergence } from "../llm/providers/replay.ts";
import { ScriptError } from "../llm/scripted/script.ts";
import { PolicyRefused } from "../policy/refused.ts";
import type { Diagnostic } from "../sam/types.ts";
import { PathRefused, SandboxStartFailed, SandboxUnavailable } from "../sandbox/types.ts";
import { TaskFolderBusy } from "../task-folder-lock.ts";

/** Bad input the user can fix: exit 2. */
export class InvalidInput extends Error {
  override name = "InvalidInput";
  readonly diagnostics: Diagnostic[];
  /** The SAM file that did not parse, when that was the problem. */
  readonly samFile?: string;
  constructor(message: string, diagnostics: Diagnostic[] = [], samFile?: string) {
    super(message);
    this.diagnostics = diagnostics;
    if (samFile !== undefined) this.samFile = samFile;
  }
}

/**
 * The exit code for an error a run (or its setup) threw: 2 for input the user can fix (a bad task,
 * flag, policy refusal, models config or script, a path no sandbox can bind), 1 for anything else. A run that ended has its
 * code from its outcome (exitCodeOfOutcome in runner/exit-codes.ts).
 */
export function exitCodeOf(error: unknown): number {
  if (
    error instanceof InvalidInput ||
    error instanceof PolicyRefused ||
    error instanceof ModelsConfigError ||
    error instanceof ScriptError ||
    error instanceof SubmitInputError ||
    error instanceof PathRefused ||
    error instanceof TaskFolderBusy
  ) {
    return EXIT.usage;
  }
  return EXIT.failed;
}

/**
 * What stopped a run without an outcome: `start` when a sandbox could not be started (the backend
 * or its image is missing: resuming cannot help, the cause must be fixed first), `replay` when a
 * replay diverged from its recording (the task differs there), `other` for anything else (a crash
 * the run can be resumed from).
 */
export type RunErrorKind = "start" | "replay" | "other";

export function runErrorKind(error: unknown): RunErrorKind {
  if (error instanceof ReplayDivergence) return "replay";
  if (error instanceof SandboxUnavailable || error instanceof SandboxStartFailed) return "start";
  return "other";
}

/** The run folder's `error.json`: why a run stopped without an outcome (the report shows it). */
export const RUN_ERROR_FILE = "error.json";

export function recordRunError(runDir: string, error: unknown): void {
  try {
    const record = {
      time: new Date().toISOString(),
      kind: runErrorKind(error),
      name: error instanceof Error ? error.name : "Error",
      message: error instanceof Error ? error.message : String(error),
    };
    writeFileSync(join(runDir, RUN_ERROR_FILE), `${JSON.stringify(record)}\n`);
  } catch {
    // The CLI prints the error itself; the report then says only that the run has no end.
  }
}
