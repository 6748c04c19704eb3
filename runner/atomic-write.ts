// Crash- and full-disk-safe record writes.
//
// Whole files (writeFileAtomic, and writeJsonAtomic for JSON): temp file, fsync, rename, fsync of the folder. A process killed at any moment
// leaves either the old file or the new one on disk, never half of one; a write that fails (a full
// disk) removes the temp file and leaves the target as it was.
//
// Appends (the audit tape, the history, memory files): `appendWhole` writes every byte of a record
// or none: a failed or short write is rolled back (ftruncate) to the size before the record, so the
// file still ends with its last complete line. Either way the error is a RecordWriteFailed naming
// the file and the space the record needs.
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  renameSync,
  statfsSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";

/** A record could not be written whole; the file was put back as it was (unless `rolledBack` is false). */
export class RecordWriteFailed extends Error {
  override name = "RecordWriteFailed";
  readonly file: string;
  /** Bytes of the record that could not be written. */
  readonly bytes: number;
  /** Bytes free to an unprivileged writer on that file system when the write failed, if known. */
  readonly freeBytes: number | undefined;
  /** The file ends with its last complete record (false only when even the rollback failed). */
  readonly rolledBack: boolean;
  /** The errno code of the write (ENOSPC for a full disk, EDQUOT for a quota). */
  readonly code: string | undefined;

  constructor(file: string, bytes: number, cause: unknown, rolledBack: boolean) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    const freeBytes = freeSpace(file);
    const why =
      code === "ENOSPC"
        ? "no space left on device"
        : code === "EDQUOT"
          ? "disk quota exceeded"
          : cause instanceof Error
            ? cause.message
            : String(cause);
    const short = freeBytes === undefined ? bytes : Math.max(1, bytes - freeBytes);
    const space = noSpace(code)
      ? `; the record needs ${formatBytes(bytes)}${freeBytes !== undefined ? `, ${formatBytes(freeBytes)} free` : ""}: free at least ${formatBytes(short)} more on that file system`
      : "";
    const state = rolledBack
      ? "nothing was half-written (the file is as it was before this record)"
      : "the rollback failed too: the file may end with a partial record";
    super(`cannot write ${file}: ${why}${space}; ${state}`, { cause });
    this.file = file;
    this.bytes = bytes;
    this.freeBytes = freeBytes;
    this.rolledBack = rolledBack;
    this.code = code;
    this.shortBy = short;
  }

  /** Bytes missing for this record: what must be freed at least (the run will need more after it). */
  readonly shortBy: number;

  /** The disk (or a quota) was full: freeing space and resuming fixes it. */
  get noSpace(): boolean {
    return noSpace(this.code);
  }
}

function noSpace(code: string | undefined): boolean {
  return code === "ENOSPC" || code === "EDQUOT";
}

function freeSpace(file: string): number | undefined {
  try {
    const fs = statfsSync(dirname(file));
    return Number(fs.bavail) * Number(fs.bsize);
  } catch {
    return undefined;
  }
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/**
 * Writes all of `data` at the end of `fd` (opened for append), or nothing: when a write fails or
 * stops short, the file is cut back to `sizeBefore` and a RecordWriteFailed is thrown.
 */
export function appendWhole(fd: number, data: Buffer, sizeBefore: number, file: string): void {
  let offset = 0;
  try {
    while (offset < data.length) {
      const written = writeSync(fd, data, offset, data.length - offset);
      if (written <= 0) throw Object.assign(new Error("the write made no progress"), { code: "EIO" });
      offset += written;
    }
  } catch (error) {
    if (offset === 0 && !isWriteError(error)) throw error;
    throw new RecordWriteFailed(file, data.length, error, rollBack(fd, sizeBefore));
  }
}

function isWriteError(error: unknown): boolean {
  return typeof (error as NodeJS.ErrnoException | undefined)?.code === "string";
}

function rollBack(fd: number, size: number): boolean {
  try {
    ftruncateSync(fd, size);
    return true;
  } catch {
    return false;
  }
}

/**
 * Appends `text` to `file` and fsyncs it: the whole record or, on a failure (a full disk), nothing
 * (see appendWhole). The caller keeps other writers off the file (one writer, or a file lock).
 */
export function appendDurably(file: string, text: string): void {
  const fd = openSync(file, "a");
  try {
    const data = Buffer.from(text, "utf8");
    appendWhole(fd, data, fstatSync(fd).size, file);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export type AtomicWriteOptions = {
  /** Permission bits of a newly created file. */
  mode?: number;
  /** Where the bytes go before the rename (same folder, so the rename is atomic). */
  tempFile?: string;
  /** Create the folder when missing (otherwise a missing folder is an error). */
  createFolder?: boolean;
  /** Create the temp file exclusively and never through a link (O_EXCL | O_NOFOLLOW): for folders others can write. */
  exclusive?: boolean;
};

/**
 * Writes `value` as indented JSON plus a newline, atomically (writeFileAtomic).
 */
export function writeJsonAtomic(file: string, value: unknown, options: AtomicWriteOptions = {}): void {
  writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`, options);
}

/**
 * Replaces `file` whole: a reader (or a process killed mid-write) sees the old content or the new,
 * never half. On a failure (a full disk) the temp file is removed, the target is left as it was,
 * and the error is a RecordWriteFailed. The temp file sits beside the target and ends `.tmp`
 * (readers that list a folder skip those).
 */
export function writeFileAtomic(file: string, text: string | Buffer, options: AtomicWriteOptions = {}): void {
  const data = typeof text === "string" ? Buffer.from(text, "utf8") : text;
  writeAtomicWith(file, (fd) => appendWhole(fd, data, 0, file), options, data.length);
}

/**
 * Replaces `file` whole with what `fill` writes to the temp file's descriptor (a streamed copy, say),
 * with writeFileAtomic's guarantees: the old content or the new, never half; on a failure the temp
 * file is removed and the target left as it was. `bytes` (when known) sizes the full-disk message.
 */
export function writeAtomicWith(
  file: string,
  fill: (fd: number) => void,
  options: AtomicWriteOptions = {},
  bytes = 0,
): void {
  replaceFile(file, fill, options, bytes);
  syncFolder(dirname(file));
}

/**
 * Replaces several files whole, each as writeFileAtomic does (temp file, fsync, rename), with one
 * fsync of each folder after the last rename instead of one per file: a process killed at any
 * moment leaves each file old or new, and once this returns every one of them is on disk. In order:
 * a reader may see the first replaced and not yet the last.
 */
export function writeFilesAtomic(
  files: readonly { file: string; text: string | Buffer; options?: AtomicWriteOptions }[],
): void {
  const folders = new Set<string>();
  for (const { file, text, options } of files) {
    const data = typeof text === "string" ? Buffer.from(text, "utf8") : text;
    replaceFile(file, (fd) => appendWhole(fd, data, 0, file), options, data.length);
    folders.add(dirname(file));
  }
  for (const folder of folders) syncFolder(folder);
}

/** The temp file written, fsynced and renamed over `file`; the folder is not synced. */
function replaceFile(
  file: string,
  fill: (fd: number) => void,
  options: AtomicWriteOptions = {},
  bytes = 0,
): void {
  const {
    mode = 0o644,
    tempFile = `${file}.${process.pid}.tmp`,
    createFolder = true,
    exclusive = false,
  } = options;
  if (createFolder) mkdirSync(dirname(file), { recursive: true });
  const flags = exclusive
    ? constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW
    : "w";
  let created = false;
  try {
    const fd = openSync(tempFile, flags, mode);
    created = true;
    try {
      fill(fd);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tempFile, file);
  } catch (error) {
    // An exclusive create that failed found something at the temp name: not ours to remove.
    if (created || !exclusive) removeQuietly(tempFile);
    if (error instanceof RecordWriteFailed || !isWriteError(error)) throw error;
    // Creating the temp file, fsync or rename failing (a full disk shows there too): the target is
    // untouched.
    throw new RecordWriteFailed(file, bytes, error, true);
  }
}

/** fsync of a folder: the renames into it are on disk. */
function syncFolder(dir: string): void {
  const folder = openSync(dir, "r");
  try {
    fsyncSync(folder);
  } finally {
    closeSync(folder);
  }
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}
