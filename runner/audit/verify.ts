// Checks a tape's hash chain and reports the first bad line and why. Detects edited lines (hash),
// deleted lines (seq gap, prev mismatch), reordered lines (seq out of order), unreadable JSON and
// incremental references (incremental.ts) that point forward or to no call on the tape.
//
// The chain alone cannot tell a tape cut off after a complete line from a shorter run, nor a tape
// whose every line was re-chained from an honest one. Two more levels catch those:
// - anchors: heads recorded outside the tape (state.json, history; see anchor.ts). A tape that ends
//   before an anchored seq lost its tail; one whose line at that seq hashes differently was rewritten.
// - a key: every line's MAC (chain.ts) is checked, so a rewrite by anyone without the key fails.
//
// readTape is the one way to read a tape: it reconstructs every call's full request and wire body.
import { readFileSync } from "node:fs";
import { sha256 } from "../sha256.ts";
import { lineMac, unsealLine } from "./chain.ts";
import { TapeExpander } from "./incremental.ts";
import type { AuditRecord, StoredCallRecord, StoredRecord, TapeAnchor, VerifyResult } from "./types.ts";

export interface VerifyOptions {
  /** The site's audit key: every line must carry a MAC that matches under it. */
  key?: Buffer;
  /** Heads recorded outside the tape; each must be on the tape with the same line hash. */
  anchors?: TapeAnchor[];
}

export function verifyTape(path: string, options: VerifyOptions = {}): VerifyResult {
  const lines = readFileSync(path, "utf8").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const expander = new TapeExpander();
  const anchors = options.anchors ?? [];
  const bySeq = new Map<number, TapeAnchor[]>();
  for (const anchor of anchors) bySeq.set(anchor.seq, [...(bySeq.get(anchor.seq) ?? []), anchor]);
  let prev: string | null = null;
  let macs = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const problem = checkLine(line, i, prev, expander, options.key);
    if (problem) return { ok: false, line: i + 1, reason: problem, records: i };
    prev = sha256(line);
    if (unsealLine(line)?.mac) macs++;
    for (const anchor of bySeq.get(i) ?? []) {
      if (anchor.hash !== prev)
        return {
          ok: false,
          line: i + 1,
          reason: `the line's hash differs from the head recorded in ${anchor.source} for seq ${i}: the chain was rewritten (at this line or before it, every later line re-chained)`,
          records: i,
        };
    }
  }
  const last = anchors.reduce<TapeAnchor | undefined>((a, b) => (a && a.seq >= b.seq ? a : b), undefined);
  if (last && last.seq >= lines.length) {
    const dropped = last.seq + 1 - lines.length;
    return {
      ok: false,
      line: lines.length + 1,
      reason: `the tape ends after ${lines.length} record(s) but ${last.source} recorded its head at seq ${last.seq}: at least ${dropped} record(s) at the end were dropped`,
      records: lines.length,
    };
  }
  return {
    ok: true,
    records: lines.length,
    ...(options.key ? { macs: "verified" as const } : macs > 0 ? { macs: "unchecked" as const } : {}),
    ...(last
      ? {
          anchors: {
            count: anchors.length,
            seq: last.seq,
            sources: [...new Set(anchors.map((a) => a.source.replace(/:\d+$/, "")))],
          },
        }
      : {}),
  };
}

function checkLine(
  line: string,
  index: number,
  prev: string | null,
  expander: TapeExpander,
  key: Buffer | undefined,
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
  if (key) {
    if (!sealed.mac)
      return "no MAC: the line was written without the audit key, or its MAC was stripped (a rewrite)";
    if (lineMac(key, sealed.claimed) !== sealed.mac)
      return "MAC does not match: the line was rewritten by someone without the audit key (or the key is not the one the tape was written with)";
  }
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
