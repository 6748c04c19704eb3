// The site's audit key: with it every tape line carries a MAC (runner/audit/chain.ts), so a tape
// rewritten by someone without the key fails `scifi audit verify`. Given as a file
// (SCIFI_AUDIT_KEY_FILE, or `scifi audit verify --key FILE`) or as the text of SCIFI_AUDIT_KEY.
// A key that is given but unusable is an error, never silently ignored (a key that does nothing
// would promise a protection that is not there).
import { readFileSync } from "node:fs";

/** Fewer bytes than this is a password, not a key. */
const MIN_KEY_BYTES = 16;

export class AuditKeyError extends Error {
  override name = "AuditKeyError";
}

/** The key from a file: its bytes, one trailing newline dropped. */
export function readAuditKeyFile(file: string): Buffer {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new AuditKeyError(`audit key file ${file}: ${(error as Error).message}`);
  }
  return checked(trimNewline(bytes), `audit key file ${file}`);
}

/** The key the environment gives (SCIFI_AUDIT_KEY_FILE wins over SCIFI_AUDIT_KEY), if any. */
export function auditKeyFromEnv(env: NodeJS.ProcessEnv = process.env): Buffer | undefined {
  const file = env.SCIFI_AUDIT_KEY_FILE;
  if (file !== undefined && file !== "") return readAuditKeyFile(file);
  const text = env.SCIFI_AUDIT_KEY;
  if (text === undefined || text === "") return undefined;
  return checked(Buffer.from(text, "utf8"), "SCIFI_AUDIT_KEY");
}

function checked(key: Buffer, what: string): Buffer {
  if (key.length < MIN_KEY_BYTES)
    throw new AuditKeyError(
      `${what} holds ${key.length} bytes; an audit key needs at least ${MIN_KEY_BYTES} (e.g. openssl rand -hex 32)`,
    );
  return key;
}

function trimNewline(bytes: Buffer): Buffer {
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === 0x0a) end--;
  if (end > 0 && bytes[end - 1] === 0x0d) end--;
  return bytes.subarray(0, end);
}
