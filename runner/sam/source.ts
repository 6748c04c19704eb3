// Reading a SAM file's bytes safely: a size cap before reading, strict UTF-8, and the SHA-256 of
// the exact bytes (the runner records it on the tape, so it must hash what was parsed).
import { readFileSync, statSync } from "node:fs";
import { sha256 } from "../sha256.ts";
import type { Diagnostic } from "./types.ts";

/** SAM files are prose and metadata; anything larger is data that belongs in a separate file. */
export const MAX_SAM_BYTES = 1024 * 1024;

export type SourceRead =
  | { ok: true; text: string; sha256: string }
  | { ok: false; diagnostic: Omit<Diagnostic, "file"> };

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Reads and decodes a file, or says precisely why it cannot be a SAM. */
export function readSource(path: string): SourceRead {
  let size: number;
  try {
    const stat = statSync(path);
    if (!stat.isFile()) return failure(1, 1, "not a regular file; give the path of a SAM Markdown file");
    size = stat.size;
  } catch (error) {
    return failure(1, 1, `cannot read file: ${describeFsError(error)}`);
  }
  if (size > MAX_SAM_BYTES) return failure(1, 1, tooLargeMessage(size));
  return decodeSource(readFileSync(path));
}

/** Decodes bytes already in memory (also used for the string variant of the parser). */
export function decodeSource(bytes: Uint8Array): SourceRead {
  if (bytes.length > MAX_SAM_BYTES) return failure(1, 1, tooLargeMessage(bytes.length));
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    const bad = firstInvalidUtf8(bytes);
    const { line, column } = byteLineColumn(bytes, bad);
    const byte = (bytes[bad] ?? 0).toString(16).padStart(2, "0");
    return failure(
      line,
      column,
      `file is not valid UTF-8 (byte 0x${byte} at byte offset ${bad}); save the file with UTF-8 encoding`,
    );
  }
  return { ok: true, text, sha256: sha256(bytes) };
}

function tooLargeMessage(size: number): string {
  return (
    `file is ${(size / 1024 / 1024).toFixed(1)} MiB, larger than the 1 MiB limit for SAM files; ` +
    "move data into separate files next to the SAM and refer to them"
  );
}

function failure(line: number, column: number, message: string): SourceRead {
  return { ok: false, diagnostic: { line, column, severity: "error", message } };
}

function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES") return "permission denied";
  return error instanceof Error ? error.message : String(error);
}

/** Byte offset of the first byte that breaks UTF-8 (called only after a strict decode failed). */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i] ?? 0;
    const length = lead < 0x80 ? 1 : lead >= 0xc2 && lead < 0xe0 ? 2 : lead >= 0xe0 && lead < 0xf0 ? 3 : 4;
    if (lead >= 0x80 && (lead < 0xc2 || lead > 0xf4)) return i;
    for (let k = 1; k < length; k++) {
      const next = bytes[i + k];
      if (next === undefined || (next & 0xc0) !== 0x80) return i;
    }
    if (length === 3 || length === 4) {
      const second = bytes[i + 1] ?? 0;
      // Overlong forms, UTF-16 surrogates and code points above U+10FFFF.
      if (lead === 0xe0 && second < 0xa0) return i;
      if (lead === 0xed && second >= 0xa0) return i;
      if (lead === 0xf0 && second < 0x90) return i;
      if (lead === 0xf4 && second >= 0x90) return i;
    }
    i += length;
  }
  return bytes.length;
}

/** 1-based line and column (in characters) of a byte offset, decoding the valid prefix. */
function byteLineColumn(bytes: Uint8Array, offset: number): { line: number; column: number } {
  const prefix = new TextDecoder("utf-8").decode(bytes.subarray(0, offset));
  const lastNewline = prefix.lastIndexOf("\n");
  const line = prefix.split("\n").length;
  return { line, column: prefix.length - lastNewline };
}
