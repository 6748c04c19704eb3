// Why a run failed, as the first thing a person reads: the checks of the last judged iteration that
// failed (id, command, output tail) and the Expectation items the review failed (id, why). Read
// from the history and the parsed SAM, so the terminal's last lines and the report's header say
// the same.
import type { HistoryRecord } from "../memory/history-events.ts";
import type { SamNode } from "../sam/types.ts";
import { foldRow, LISTING_WIDTH, visible } from "../terminal-text.ts";
import { readHeldOutput } from "./check-evidence.ts";

export interface FailedCheck {
  id: string;
  node: string;
  command: string;
  exitCode: number;
  timedOut: boolean;
  /** The last lines of the check's output. */
  tail: string;
}

export interface FailedItem {
  id: string;
  node: string;
  /** The review's evidence for failing it. */
  why: string;
}

export interface FailureFirst {
  iteration: number;
  checks: FailedCheck[];
  items: FailedItem[];
}

/** Lines of a check's output shown first (the whole output is in the timeline and check-output/). */
export const TAIL_LINES = 6;

/**
 * The failed checks and review items of the last iteration that had any; undefined when none did.
 * With `runDir`, a compare stage shows its real exit code and output (withheld from the agents, kept
 * for people in the run folder).
 */
export function failureFirst(
  history: readonly HistoryRecord[],
  root: SamNode | undefined,
  runDir?: string,
): FailureFirst | undefined {
  const commands = new Map<string, string>();
  const visit = (node: SamNode) => {
    for (const item of node.items) for (const check of item.checks) commands.set(check.id, check.command);
    node.children.forEach(visit);
  };
  if (root) visit(root);
  let last: FailureFirst | undefined;
  // The last iteration with a failure: a later one that failed nothing (a limit in its work pass)
  // leaves it the run's last word.
  const at = (iteration: number): FailureFirst => {
    if (last?.iteration !== iteration) last = { iteration, checks: [], items: [] };
    return last;
  };
  for (const event of history) {
    if (event.type === "check" && !event.passed) {
      const held = runDir && event.heldOutput ? readHeldOutput(runDir, event.heldOutput) : undefined;
      at(event.iteration).checks.push({
        id: event.check,
        node: event.node,
        command: (commands.get(event.check) ?? "(command not recorded)").trim(),
        exitCode: held?.exitCode ?? event.exitCode,
        timedOut: held?.timedOut ?? event.timedOut === true,
        tail: tailLines(held?.output ?? event.output ?? event.detail ?? ""),
      });
    }
    if (event.type === "verdict") {
      const failed = event.items.filter((i) => !i.pass);
      if (failed.length === 0) continue;
      const entry = at(event.iteration);
      for (const item of failed)
        entry.items.push({
          id: item.id,
          node: event.node,
          why: (item.evidence ?? "").trim() || "(no evidence given)",
        });
    }
  }
  return last;
}

/** Terminal columns the lines are folded at: the narrowest terminal a person reads them on. */
const WIDTH = LISTING_WIDTH;

function tailLines(text: string): string {
  const lines = text.trimEnd().split("\n");
  return lines.slice(-TAIL_LINES).join("\n").trim() || "(no output)";
}

/** The plain-text form for the terminal: a few lines a person reads before anything else. */
export function failureLines(failure: FailureFirst): string[] {
  const out: string[] = [];
  for (const c of failure.checks) {
    out.push(
      ...foldRow(
        `failed check ${c.id} (iteration ${failure.iteration}, ${c.timedOut ? "timed out" : `exit ${c.exitCode}`}): ${visible(oneLine(c.command))}`,
        { first: "", continuation: "  + ", width: WIDTH },
      ),
    );
    // Agent text (a check prints what the agent's code wrote): escaped, as every listing is, and
    // folded at 80 columns with the mark on every row (a soft-wrapped row would have none).
    for (const line of c.tail.split("\n"))
      out.push(...foldRow(visible(line), { first: "  | ", continuation: "  | ", width: WIDTH }));
  }
  // The review's evidence may quote the agent's claim, files and output: one line, escaped, folded.
  for (const i of failure.items)
    out.push(
      ...foldRow(`review failed ${i.id} (iteration ${failure.iteration}): ${visible(i.why)}`, {
        first: "",
        continuation: "  + ",
        width: WIDTH,
      }),
    );
  return out;
}

function oneLine(command: string): string {
  const lines = command.split("\n");
  return lines.length > 1 ? `${lines[0]} ... (${lines.length} lines)` : command;
}
