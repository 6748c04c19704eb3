// Buffered writes to a file descriptor, and the temporary files an export writes before it knows
// the run may leave (a refused export leaves nothing behind: see export.ts).
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const CHUNK = 1 << 16;

/** Where exported text goes: the output file, or a part of the spool. */
export interface Out {
  write(text: string): void;
  writeBytes(bytes: Buffer): void;
  flush(): void;
}

export class Sink implements Out {
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

  writeBytes(bytes: Buffer): void {
    this.flush();
    writeSync(this.#fd, bytes);
  }

  /** Appends a whole file's bytes after what was written. */
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

/**
 * A private folder holding one spool file that many parts write into, each its own buffered
 * stream of extents (an agent pass's steps, written as they are made, read back in order when the
 * document is assembled); one file, so cleaning up is one unlink whatever the number of parts.
 * `dispose` removes it whatever happened.
 */
export class Spool {
  readonly dir = mkdtempSync(join(tmpdir(), "scifi-export-"));
  readonly #path = join(this.dir, "spool");
  readonly #fd = openSync(this.#path, "wx+", 0o600);
  #end = 0;
  #closed = false;

  /** A new part: a sink whose text lands in the spool, and `copyTo` that writes it out in order. */
  part(): SpoolPart {
    return new SpoolPart((data) => {
      // Strings are written as they are (no Buffer copy); the count written is the extent's length.
      const length =
        typeof data === "string"
          ? writeSync(this.#fd, data, this.#end, "utf8")
          : writeSync(this.#fd, data, 0, data.length, this.#end);
      const extent = { offset: this.#end, length };
      this.#end += length;
      return extent;
    }, this.#fd);
  }

  dispose(): void {
    if (!this.#closed) closeSync(this.#fd);
    this.#closed = true;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export class SpoolPart implements Out {
  readonly #append: (data: string | Buffer) => { offset: number; length: number };
  readonly #fd: number;
  readonly #extents: { offset: number; length: number }[] = [];
  #parts: string[] = [];
  #size = 0;

  constructor(append: (data: string | Buffer) => { offset: number; length: number }, fd: number) {
    this.#append = append;
    this.#fd = fd;
  }

  write(text: string): void {
    this.#parts.push(text);
    this.#size += text.length;
    if (this.#size >= CHUNK) this.flush();
  }

  flush(): void {
    if (this.#parts.length === 0) return;
    this.#extents.push(this.#append(this.#parts.join("")));
    this.#parts = [];
    this.#size = 0;
  }

  writeBytes(bytes: Buffer): void {
    this.flush();
    this.#extents.push(this.#append(bytes));
  }

  /** Writes the part's bytes, in order, to `out` (after flushing what is buffered). */
  copyTo(out: Out): void {
    this.flush();
    out.flush();
    for (const { offset, length } of this.#extents) {
      const buffer = Buffer.allocUnsafe(length);
      let done = 0;
      while (done < length) done += readSync(this.#fd, buffer, done, length - done, offset + done);
      out.writeBytes(buffer);
    }
  }
}
