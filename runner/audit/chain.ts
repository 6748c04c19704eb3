// The line format shared by the writer and the verifier. A line is the record's JSON with its own
// hash appended as the last member: `{...,"hash":"<sha256 of the JSON without it>"}`. Hashing the
// exact bytes (not a re-serialisation) makes any edit, even whitespace, visible.
//
// With a site's audit key (runner/audit/key.ts) the line also carries `"mac":"<HMAC-SHA256 of the
// hash under the key>"` after the hash: the hash covers the body, the body holds `prev`, so the
// MACs chain too and a tape re-chained without the key fails `verify --key`.
import { createHash, createHmac } from "node:crypto";

const HASH_SUFFIX = /,"hash":"([0-9a-f]{64})"(?:,"mac":"([0-9a-f]{64})")?\}$/;

/** The MAC of a line: HMAC-SHA256 under the audit key over the line's hash (hex). */
export function lineMac(key: Buffer, hash: string): string {
  return createHmac("sha256", key).update(hash).digest("hex");
}

/** Seals a record body (JSON text of an object) into a tape line. */
export function sealLine(body: string, key?: Buffer): string {
  return sealLineHashed(body, key).line;
}

/**
 * sealLine plus the SHA-256 of the sealed line (the next record's `prev`), hashing the body once:
 * the line is the body with its closing brace moved after the hash member (and the MAC with a key).
 */
export function sealLineHashed(body: string, key?: Buffer): { line: string; lineHash: string } {
  const open = createHash("sha256").update(body.slice(0, -1));
  const hash = open.copy().update("}").digest("hex");
  const suffix = key ? `,"hash":"${hash}","mac":"${lineMac(key, hash)}"}` : `,"hash":"${hash}"}`;
  return { line: `${body.slice(0, -1)}${suffix}`, lineHash: open.update(suffix).digest("hex") };
}

/** Splits a line into its body, the hash it claims and its MAC if any; null when the suffix is missing. */
export function unsealLine(line: string): { body: string; claimed: string; mac?: string } | null {
  const match = HASH_SUFFIX.exec(line);
  if (!match?.[1]) return null;
  return {
    body: `${line.slice(0, match.index)}}`,
    claimed: match[1],
    ...(match[2] ? { mac: match[2] } : {}),
  };
}
