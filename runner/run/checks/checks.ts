// The runner's own checks: the Expectation `check` blocks of a node and of every sub-SAM under it,
// run in a sandbox of their own (fresh /tmp, no process of the work pass alive), after the SAM files
// and check assets were put back from the runner's pristine copies (runner/run/task-folder/pristine.ts).
import { sandboxName } from "../../policy/spec.ts";
import { RunEnding } from "../../run-ending.ts";
import type { CheckOutcome } from "../../run-folder/state.ts";
import { isCompareStage } from "../../sam/check-blocks.ts";
import type { Check, SamNode } from "../../sam/types.ts";
import type { Sandbox } from "../../sandbox/types.ts";
import type { Tampered } from "../task-folder/pristine.ts";

/** Lines and bytes of a check's output kept in the history, the review brief and task memory. */
export const CHECK_OUTPUT_LINES = 200;
export const CHECK_OUTPUT_BYTES = 64 * 1024;

/** One tampered path, as the run reports it. */
export type TamperedFile = Tampered & { what: string; absolute: string; expected: string; actual: string };

export class Tampering extends RunEnding {
  override name = "Tampering";
  readonly found: readonly TamperedFile[];
  constructor(found: readonly TamperedFile[]) {
    const first = found[0];
    super(
      first
        ? `${first.what} ${first.absolute} changed during the run: ${first.problem}${found.length > 1 ? ` (and ${found.length - 1} more)` : ""}: tampering`
        : "tampering",
      { status: "failed", limit: "tampering" },
    );
    this.found = found;
  }
}

/** One check to run, with the node and item it belongs to. */
export interface PlannedCheck {
  node: SamNode;
  item: SamNode["items"][number];
  check: Check;
}

export interface CheckRunOptions {
  sandbox: Sandbox;
  /** The node under review (outcomes of its sub-SAMs' checks name their node). */
  node: SamNode;
  checks: readonly PlannedCheck[];
  /** Prepended to every check's output (e.g. the deliverable-link report). */
  notice?: string;
  /** Kills a running check (the run's wall-time deadline). */
  signal?: AbortSignal;
  onCheck?: (outcome: CheckOutcome) => void;
  /** After each check, before it is told (a run stage's outputs are copied out here); may change it. */
  afterCheck?: (outcome: CheckOutcome, planned: PlannedCheck) => Promise<CheckOutcome> | CheckOutcome;
}

/** Every check of the subtree, children before their parent, in document order. */
export function subtreeChecks(node: SamNode): PlannedCheck[] {
  return [
    ...node.children.flatMap((child) => subtreeChecks(child)),
    ...node.items.flatMap((item) => item.checks.map((check) => ({ node, item, check }))),
  ];
}

/**
 * A compare stage: ```compare```, or ```check hidden``` (a SAM parsed before stages keeps `hidden`
 * in its recorded sam.json). Everything else runs the agent's work.
 */
export function isCompare(check: Check): boolean {
  return isCompareStage(check);
}

/**
 * How a check's script runs: bash with pipefail, so a failing command anywhere in a pipeline fails
 * the check (`test | tail -n 5` no longer passes whatever the test does). Every image has bash.
 */
export function checkArgv(command: string): string[] {
  return ["bash", "-o", "pipefail", "-c", command];
}

/** Runs the given checks, in order, in the given (fresh) sandbox. */
export async function runChecks(options: CheckRunOptions): Promise<CheckOutcome[]> {
  const outcomes: CheckOutcome[] = [];
  for (const planned of options.checks) {
    const { node, item, check } = planned;
    const result = await options.sandbox.exec(checkArgv(check.command), {
      timeoutMs: check.timeoutSec * 1000,
      maxOutputBytes: CHECK_OUTPUT_BYTES,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const output = [options.notice, result.stdout, result.stderr].filter(Boolean).join("\n");
    const outcome: CheckOutcome = {
      id: check.id,
      itemId: item.id,
      ...(node.id !== options.node.id ? { node: node.id } : {}),
      command: check.command,
      passed: !result.timedOut && result.exitCode === 0,
      exitCode: result.exitCode,
      timedOut: result.timedOut,
      output: outputTail(output),
      durationMs: result.durationMs,
      sandbox: sandboxName(options.sandbox.spec),
    };
    const checked = (await options.afterCheck?.(outcome, planned)) ?? outcome;
    outcomes.push(checked);
    options.onCheck?.(checked);
  }
  return outcomes;
}

/** The last CHECK_OUTPUT_LINES lines, at most CHECK_OUTPUT_BYTES. */
export function outputTail(text: string): string {
  const lines = text.split("\n");
  let tail = lines.slice(-CHECK_OUTPUT_LINES).join("\n");
  if (Buffer.byteLength(tail) > CHECK_OUTPUT_BYTES) {
    tail = Buffer.from(tail)
      .subarray(-CHECK_OUTPUT_BYTES)
      .toString("utf8")
      .replace(/^\uFFFD+/, "");
  }
  return lines.length > CHECK_OUTPUT_LINES
    ? `[... ${lines.length - CHECK_OUTPUT_LINES} earlier lines cut ...]\n${tail}`
    : tail;
}
