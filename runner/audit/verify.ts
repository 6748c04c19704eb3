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
  const verifier = new LineVerifier(options);
  for (const line of lines) {
    const checked = verifier.next(line);
    if (!checked.ok) return checked;
  }
  return verifier.end();
}

/** One line checked by LineVerifier: its full record and the SHA-256 of the line, or why it fails. */
export type CheckedLine =
  | { ok: true; record: AuditRecord; lineHash: string }
  | { ok: false; line: number; reason: string; records: number };

/**
 * verifyTape's checks one line at a time, for readers that stream a tape (scifi export): `next`
 * for each line in order, then `end` for the anchors past the last line. `keep` bounds how many
 * recent calls are held for references (the writer refers to at most RECENT_CALLS, tape.ts);
 * without it every call is held, as verifyTape does.
 */
export class LineVerifier {
  readonly #expander: TapeExpander;
  readonly #key: Buffer | undefined;
  readonly #anchors: TapeAnchor[];
  readonly #bySeq = new Map<number, TapeAnchor[]>();
  #prev: string | null = null;
  #index = 0;
  #macs = 0;

  constructor(options: VerifyOptions & { keep?: number } = {}) {
    this.#expander = new TapeExpander(options.keep === undefined ? {} : { keep: options.keep });
    this.#key = options.key;
    this.#anchors = options.anchors ?? [];
    for (const anchor of this.#anchors)
      this.#bySeq.set(anchor.seq, [...(this.#bySeq.get(anchor.seq) ?? []), anchor]);
  }

  next(line: string): CheckedLine {
    const i = this.#index;
    const checked = checkLine(line, i, this.#prev, this.#expander, this.#key);
    if (typeof checked === "string") return { ok: false, line: i + 1, reason: checked, records: i };
    const lineHash = sha256(line);
    this.#prev = lineHash;
    if (unsealLine(line)?.mac) this.#macs++;
    for (const anchor of this.#bySeq.get(i) ?? []) {
      if (anchor.hash !== lineHash)
        return {
          ok: false,
          line: i + 1,
          reason: `the line's hash differs from the head recorded in ${anchor.source} for seq ${i}: the chain was rewritten (at this line or before it, every later line re-chained)`,
          records: i,
        };
    }
    this.#index++;
    return { ok: true, record: checked, lineHash };
  }

  /** The result once every line was given to `next` (each of them ok). */
  end(): VerifyResult {
    const count = this.#index;
    const anchors = this.#anchors;
    const last = anchors.reduce<TapeAnchor | undefined>((a, b) => (a && a.seq >= b.seq ? a : b), undefined);
    if (last && last.seq >= count) {
      const dropped = last.seq + 1 - count;
      return {
        ok: false,
        line: count + 1,
        reason: `the tape ends after ${count} record(s) but ${last.source} recorded its head at seq ${last.seq}: at least ${dropped} record(s) at the end were dropped`,
        records: count,
      };
    }
    return {
      ok: true,
      records: count,
      ...(this.#key ? { macs: "verified" as const } : this.#macs > 0 ? { macs: "unchecked" as const } : {}),
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
}

/** The line's full record, or what is wrong with it. */
function checkLine(
  line: string,
  index: number,
  prev: string | null,
  expander: TapeExpander,
  key: Buffer | undefined,
): AuditRecord | string {
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
      return expander.expand(record as StoredCallRecord);
    } catch (error) {
      return `bad reference: ${(error as Error).message}`;
    }
  }
  return record as AuditRecord;
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
