// The line format shared by the writer and the verifier. A line is the record's JSON with its own
// hash appended as the last member: `{...,"hash":"<sha256 of the JSON without it>"}`. Hashing the
// exact bytes (not a re-serialisation) makes any edit, even whitespace, visible.
import { createHash } from "node:crypto";

const HASH_SUFFIX = /,"hash":"([0-9a-f]{64})"\}$/;

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Seals a record body (JSON text of an object) into a tape line. */
export function sealLine(body: string): string {
  return sealLineHashed(body).line;
}

/**
 * sealLine plus the SHA-256 of the sealed line (the next record's `prev`), hashing the body once:
 * the line is the body with its closing brace moved after the hash member.
 */
export function sealLineHashed(body: string): { line: string; lineHash: string } {
  const open = createHash("sha256").update(body.slice(0, -1));
  const hash = open.copy().update("}").digest("hex");
  const suffix = `,"hash":"${hash}"}`;
  return { line: `${body.slice(0, -1)}${suffix}`, lineHash: open.update(suffix).digest("hex") };
}

/** Splits a line into its body and the hash it claims; null when the suffix is missing. */
export function unsealLine(line: string): { body: string; claimed: string } | null {
  const match = HASH_SUFFIX.exec(line);
  if (!match?.[1]) return null;
  return { body: `${line.slice(0, match.index)}}`, claimed: match[1] };
}
