// Checks a tape's hash chain and reports the first bad line and why. Detects edited lines (hash),
// deleted lines (seq gap, prev mismatch), reordered lines (seq out of order) and unreadable JSON.
// A tape cut off after a complete line cannot be told from a shorter run by the chain alone.
import { readFileSync } from "node:fs";
import { sha256, unsealLine } from "./chain.ts";
import type { AuditRecord, VerifyResult } from "./types.ts";

export function verifyTape(path: string): VerifyResult {
  const lines = readFileSync(path, "utf8").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  let prev: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const problem = checkLine(lines[i] ?? "", i, prev);
    if (problem) return { ok: false, line: i + 1, reason: problem, records: i };
    prev = sha256(lines[i] ?? "");
  }
  return { ok: true, records: lines.length };
}

function checkLine(line: string, index: number, prev: string | null): string | undefined {
  let record: Partial<AuditRecord>;
  try {
    record = JSON.parse(line) as Partial<AuditRecord>;
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
  return undefined;
}

/** Reads all records (no verification; call verifyTape first where integrity matters). */
export function readTape(path: string): AuditRecord[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as AuditRecord);
}
