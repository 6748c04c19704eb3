// Reads a run's tape once, line by line, verifying each line as it goes (chain, anchors, MAC with
// a key: runner/audit/verify.ts's LineVerifier) and handing every call, with the hash of its line,
// to the caller. Memory stays flat in the tape's length: a line is read, checked, expanded against
// the few recent calls the writer refers to, and dropped. A tape that does not verify ends in
// TapeRefused after the last good line; callers write nothing until `readVerified` returns.
import { createReadStream, existsSync } from "node:fs";
import { dirname } from "node:path";
import { createInterface } from "node:readline";
import { readAnchors } from "../audit/anchor.ts";
import { RECENT_CALLS } from "../audit/tape.ts";
import type { AuditRecord, CallRecord, VerifyResult } from "../audit/types.ts";
import { RUN_END_EVENT } from "../audit/types.ts";
import { LineVerifier } from "../audit/verify.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import type { ExportRun } from "./source.ts";

/** A tape that does not verify: the export of its run is refused. */
export class TapeRefused extends Error {
  override name = "TapeRefused";
}

/** A call as an export sees it: the full record, its line's hash, and the SAM node it worked on. */
export interface TapedCall {
  record: CallRecord;
  /** SHA-256 of the record's line on the tape (the next line's `prev`). */
  lineHash: string;
  node: string;
}

export interface ReadOptions {
  key?: Buffer;
  /** Called for each call in tape order. */
  onCall: (call: TapedCall) => void;
  /** Called for the other records (events, injected memory and skills). */
  onRecord?: (record: AuditRecord) => void;
}

/** Reads and verifies `tape`; resolves with the verification, or rejects with TapeRefused. */
export async function readVerified(
  run: ExportRun,
  options: ReadOptions,
): Promise<Extract<VerifyResult, { ok: true }>> {
  const { tape, history, runId } = run;
  if (!existsSync(tape)) throw new TapeRefused(`${tape}: no audit tape`);
  const { anchors, problems } = readAnchors(dirname(tape));
  if (problems.length > 0)
    throw new TapeRefused(
      `${tape}: a recorded head cannot be read (${problems.join("; ")}), so the tape cannot be vouched for`,
    );
  const verifier = new LineVerifier({
    anchors,
    keep: RECENT_CALLS,
    ...(options.key ? { key: options.key } : {}),
  });
  const nodes = nodeOfIteration(history);
  const lines = createInterface({ input: createReadStream(tape, { encoding: "utf8" }), crlfDelay: Infinity });
  let n = 0;
  let ended: unknown;
  for await (const line of lines) {
    n++;
    const checked = verifier.next(line);
    if (!checked.ok)
      throw new TapeRefused(`${tape}:${checked.line}: ${checked.reason}${hint(checked.reason)}`);
    const record = checked.record;
    // Another run's genuine tape (and heads) copied into a run folder verifies on its own.
    if (record.runId !== runId)
      throw new TapeRefused(
        `${tape}:${n}: the record belongs to run ${JSON.stringify(record.runId)}, not to ${JSON.stringify(runId)} (state.json runId): another run's tape in this run's folder is not exported`,
      );
    if (record.kind === "event" && record.event === RUN_END_EVENT) ended = record.data?.outcome;
    else if (record.kind === "call") ended = undefined; // a call after an end: the end is not the last word
    if (record.kind === "call")
      options.onCall({ record, lineHash: checked.lineHash, node: nodeOf(record, nodes) });
    else options.onRecord?.(record);
  }
  const result = verifier.end();
  if (!result.ok) throw new TapeRefused(`${tape}:${result.line}: ${result.reason}`);
  const unended = endProblem(run, ended);
  if (unended) throw new TapeRefused(`${tape}: ${unended}`);
  return result;
}

/**
 * Why the tape does not close the run as state.json says it ended, or undefined. The run_end
 * record is chained (and MAC'd with a key) like every other: a tape cut short, with its heads
 * moved to the cut, has none, so nothing sealed vouches for the verdict. An unfinished run, or a
 * tape written before scifi recorded run ends, is exported only with allowUnfinished.
 */
function endProblem(run: ExportRun, ended: unknown): string | undefined {
  const outcome = run.verdict === "unfinished" ? undefined : run.verdict;
  if (ended !== undefined && ended !== outcome)
    return `the tape's run_end record says the run ended ${JSON.stringify(ended)}, state.json says ${JSON.stringify(run.verdict)}: the verdict cannot be vouched for`;
  if (ended !== undefined || run.allowUnfinished) return undefined;
  return outcome === undefined
    ? "the run has no outcome (unfinished, or state.json's outcome removed): pass --allow-unfinished to export it, labelled unfinished"
    : `the tape has no run_end record after its last call, so nothing on it vouches that the run ended ${outcome} (a tape cut short with its heads moved, or one written before scifi recorded run ends): pass --allow-unfinished to export it anyway`;
}

/** A reference the streaming reader cannot resolve may only be older than the calls it keeps. */
function hint(reason: string): string {
  return reason.includes("is not a call on this tape")
    ? ` (or it refers further back than the ${RECENT_CALLS} recent calls scifi's writer refers to and an export keeps: \`scifi audit verify\` checks the whole tape)`
    : "";
}

/** The node each iteration worked on (its pre-scan's choice). */
function nodeOfIteration(history: HistoryRecord[]): Map<number, string> {
  const out = new Map<number, string>();
  for (const event of history) if (event.type === "prescan") out.set(event.iteration, event.node);
  return out;
}

/** Run-level roles (pre-scan, final review) belong to the root; the others to their iteration's node. */
function nodeOf(record: CallRecord, nodes: Map<number, string>): string {
  if (record.role === "prescan" || record.role === "final_review" || record.iteration === undefined)
    return "root";
  return nodes.get(record.iteration) ?? "root";
}
