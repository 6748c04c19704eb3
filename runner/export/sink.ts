// Buffered writes to a file descriptor, and the temporary files an export writes before it knows
// the run may leave (a refused export leaves nothing behind: see export.ts).
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const CHUNK = 1 << 16;

export class Sink {
  readonly #fd: number;
  #parts: string[] = [];
  #size = 0;
  /** Characters written so far. */
  written = 0;

  constructor(fd: number) {
    this.#fd = fd;
  }

  write(text: string): void {
    this.#parts.push(text);
    this.#size += text.length;
    this.written += text.length;
    if (this.#size >= CHUNK) this.flush();
  }

  flush(): void {
    if (this.#parts.length === 0) return;
    writeSync(this.#fd, this.#parts.join(""));
    this.#parts = [];
    this.#size = 0;
  }

  /** Appends a whole file's bytes (a spool) after what was written. */
  copyFrom(path: string): void {
    this.flush();
    const fd = openSync(path, "r");
    try {
      const buffer = Buffer.allocUnsafe(CHUNK);
      for (;;) {
        const n = readSync(fd, buffer, 0, CHUNK, null);
        if (n === 0) break;
        writeSync(this.#fd, buffer, 0, n);
      }
    } finally {
      closeSync(fd);
    }
  }
}

/** A private folder of spool files, removed by `dispose` whatever happened. */
export class Spool {
  readonly dir = mkdtempSync(join(tmpdir(), "scifi-export-"));
  #next = 0;
  readonly #open: { fd: number; sink: Sink }[] = [];

  /** A new spool file: its path and a sink writing to it. */
  file(): { path: string; sink: Sink; close: () => void } {
    const path = join(this.dir, `${this.#next++}.part`);
    const fd = openSync(path, "wx", 0o600);
    const entry = { fd, sink: new Sink(fd) };
    this.#open.push(entry);
    return {
      path,
      sink: entry.sink,
      close: () => {
        entry.sink.flush();
      },
    };
  }

  dispose(): void {
    for (const { fd } of this.#open) {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
