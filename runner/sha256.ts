// The one SHA-256 of the runner: the digest of a text (as UTF-8) or of bytes, hex unless asked
// otherwise. Every record that names content by hash (SAM files, memory entries, skills, tapes,
// job scripts, approval ids) uses it, so two places never disagree on what was hashed. Hashes
// built up over chunks (a file read in pieces, a tape line sealed in two steps) use createHash
// directly; a leaf: imports nothing of scifi.
import { type BinaryToTextEncoding, createHash } from "node:crypto";

export function sha256(data: string | Uint8Array, encoding: BinaryToTextEncoding = "hex"): string {
  return createHash("sha256").update(data).digest(encoding);
}
