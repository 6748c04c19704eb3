// Checks a tape's hash chain and reports the first bad line and why. Detects edited lines (hash),
// deleted lines (seq gap, prev mismatch), reordered lines (seq out of order), unreadable JSON and
// incremental references (incremental.ts) that point forward or to no call on the tape.
// A tape cut off after a complete line cannot be told from a shorter run by the chain alone.
//
// readTape is the one way to read a tape: it reconstructs every call's full request and wire body.
import { readFileSync } from "node:fs";
import { sha256, unsealLine } from "./chain.ts";
import { TapeExpander } from "./incremental.ts";
import type { AuditRecord, StoredCallRecord, StoredRecord, VerifyResult } from "./types.ts";

export function verifyTape(path: string): VerifyResult {
  const lines = readFileSync(path, "utf8").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const expander = new TapeExpander();
  let prev: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const problem = checkLine(lines[i] ?? "", i, prev, expander);
    if (problem) return { ok: false, line: i + 1, reason: problem, records: i };
    prev = sha256(lines[i] ?? "");
  }
  return { ok: true, records: lines.length };
}

function checkLine(
  line: string,
  index: number,
  prev: string | null,
  expander: TapeExpander,
): string | undefined {
  let record: Partial<StoredRecord>;
  try {
    record = JSON.parse(line) as Partial<StoredRecord>;
  } catch (error) {
    return `not valid JSON (${(error as Error).message}): the line was damaged or cut off`;
  }
  const sealed = unsealLine(line);
  if (!sealed) return "no hash at the end of the line: the line was edited or is not a tape record";
  if (sha256(sealed.body) !== sealed.claimed)
    return "hash does not match the content: the line was edited after it was written";
  if (typeof record.seq !== "number") return "no seq number";
  if (record.seq > index)
    return `seq ${record.seq} where ${index} was expected: ${record.seq - index} line(s) before it were deleted`;
  if (record.seq < index)
    return `seq ${record.seq} where ${index} was expected: lines were reordered or duplicated`;
  if (record.prev !== prev)
    return "prev does not match the hash of the line before it: a line before it was changed, deleted or moved";
  if (record.kind === "call") {
    try {
      expander.expand(record as StoredCallRecord);
    } catch (error) {
      return `bad reference: ${(error as Error).message}`;
    }
  }
  return undefined;
}

export interface ReadTapeOptions {
  /**
   * Skip unreadable lines and calls whose references cannot be resolved instead of throwing
   * (for views of a damaged tape; verifyTape says what is wrong).
   */
  tolerant?: boolean;
}

/**
 * Reads all records with every call's full request and wire body reconstructed (no chain check;
 * call verifyTape first where integrity matters). Records share unchanged parts with earlier ones:
 * treat them as read-only.
 */
export function readTape(path: string, options: ReadTapeOptions = {}): AuditRecord[] {
  const lines = readFileSync(path, "utf8").split("\n");
  const stored: StoredRecord[] = [];
  for (const [index, line] of lines.entries()) {
    if (line.trim() === "") continue;
    try {
      stored.push(JSON.parse(line) as StoredRecord);
    } catch (error) {
      if (options.tolerant) continue;
      throw new Error(`${path} line ${index + 1} is not valid JSON: ${(error as Error).message}`);
    }
  }
  return expandRecords(stored, options);
}

/** Stored records (in tape order) -> records with full requests; see readTape. */
export function expandRecords(records: StoredRecord[], options: ReadTapeOptions = {}): AuditRecord[] {
  const expander = new TapeExpander();
  const out: AuditRecord[] = [];
  for (const record of records) {
    if (record.kind !== "call") {
      out.push(record);
      continue;
    }
    try {
      out.push(expander.expand(record));
    } catch (error) {
      if (options.tolerant) continue;
      throw new Error(`audit tape record seq ${record.seq}: ${(error as Error).message}`);
    }
  }
  return out;
}
