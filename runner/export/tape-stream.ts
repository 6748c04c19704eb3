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
import { LineVerifier } from "../audit/verify.ts";
import type { HistoryRecord } from "../memory/history-events.ts";

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
  tape: string,
  history: HistoryRecord[],
  options: ReadOptions,
): Promise<Extract<VerifyResult, { ok: true }>> {
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
  for await (const line of lines) {
    const checked = verifier.next(line);
    if (!checked.ok)
      throw new TapeRefused(`${tape}:${checked.line}: ${checked.reason}${hint(checked.reason)}`);
    const record = checked.record;
    if (record.kind === "call")
      options.onCall({ record, lineHash: checked.lineHash, node: nodeOf(record, nodes) });
    else options.onRecord?.(record);
  }
  const result = verifier.end();
  if (!result.ok) throw new TapeRefused(`${tape}:${result.line}: ${result.reason}`);
  return result;
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
