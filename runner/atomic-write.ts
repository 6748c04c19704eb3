// Crash-safe JSON files: temp file, fsync, rename, fsync of the folder. A process killed at any
// moment leaves either the old file or the new one on disk, never half of one.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export type AtomicWriteOptions = {
  /** Permission bits of a newly created file. */
  mode?: number;
  /** Where the bytes go before the rename (same folder, so the rename is atomic). */
  tempFile?: string;
  /** Create the folder when missing (otherwise a missing folder is an error). */
  createFolder?: boolean;
};

/** Writes `value` as indented JSON plus a newline, atomically. */
export function writeJsonAtomic(file: string, value: unknown, options: AtomicWriteOptions = {}): void {
  const { mode = 0o644, tempFile = `${file}.${process.pid}.tmp`, createFolder = true } = options;
  if (createFolder) mkdirSync(dirname(file), { recursive: true });
  const fd = openSync(tempFile, "w", mode);
  try {
    writeSync(fd, `${JSON.stringify(value, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tempFile, file);
  const folder = openSync(dirname(file), "r");
  try {
    fsyncSync(folder);
  } finally {
    closeSync(folder);
  }
}
