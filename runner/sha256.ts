// The one SHA-256 of the runner: the digest of a text (as UTF-8) or of bytes, hex unless asked
// otherwise. Every record that names content by hash (SAM files, memory entries, skills, tapes,
// job scripts, approval ids) uses it, so two places never disagree on what was hashed. Hashes
// built up over chunks (a file read in pieces, a tape line sealed in two steps) use createHash
// directly (fileSha256 does it for a whole file); a leaf: imports nothing of scifi.
import { type BinaryToTextEncoding, createHash } from "node:crypto";
import { closeSync, constants, openSync, readSync } from "node:fs";

export function sha256(data: string | Uint8Array, encoding: BinaryToTextEncoding = "hex"): string {
  return createHash("sha256").update(data).digest(encoding);
}

/** A regular file's SHA-256 (hex), read in chunks through a descriptor that follows no link. */
export function fileSha256(path: string | Buffer): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const hash = createHash("sha256");
    const chunk = Buffer.allocUnsafe(1 << 20);
    for (let n = readSync(fd, chunk); n > 0; n = readSync(fd, chunk)) hash.update(chunk.subarray(0, n));
    return hash.digest("hex");
  } finally {
    closeSync(fd);
  }
}
