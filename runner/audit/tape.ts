// The audit tape: one append-only JSONL file per run, one hash-chained record a line, fsynced per
// record so a crash loses at most the call in flight. Every string is redacted before writing.
//
// One writer per run: the run loop owns the AuditTape and all LLM calls of the run go through it
// (writes are synchronous, so concurrent calls inside one process still produce a valid chain).
// The run lock (runner/loop/run-lock.ts) keeps a second process off a live run; two processes
// appending to the same tape would break the chain, and `verifyTape` would report it.
import {
  closeSync,
  existsSync,
  fsync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";
import { freezeDeep } from "../frozen.ts";
import { sealLineHashed, sha256 } from "./chain.ts";
import { compactCall, TapeExpander } from "./incremental.ts";
import { Redactor } from "./redact.ts";
import type { AuditEntry, TapeRequest } from "./types.ts";

/** How many recent calls a new call's request may reference (covers interleaved roles). */
const RECENT_CALLS = 6;

export interface AuditTapeOptions {
  runId: string;
  redactor?: Redactor;
  /** Clock override for tests. */
  now?: () => Date;
}

export class AuditTape {
  readonly path: string;
  readonly runId: string;
  readonly redactor: Redactor;
  #fd: number | undefined;
  #seq: number;
  #prev: string | null;
  readonly #now: () => Date;
  readonly #pending = new Set<Promise<void>>();
  #syncing = false;
  /** Records were written while an fsync was running. */
  #dirty = false;
  /** The recent calls exactly as a reader will reconstruct them from their lines. */
  readonly #recent = new TapeExpander({ keep: RECENT_CALLS });
  /** The last failed background fsync, if any (the next append reports it). */
  syncError: Error | undefined;

  /** Opens (or creates) the tape at `path`; an existing tape is continued where it ended. */
  constructor(path: string, options: AuditTapeOptions) {
    this.path = path;
    this.runId = options.runId;
    this.redactor = options.redactor ?? new Redactor();
    this.#now = options.now ?? (() => new Date());
    const tail = existsSync(path) ? lastLine(path) : undefined;
    if (tail === undefined) {
      this.#seq = 0;
      this.#prev = null;
    } else {
      this.#seq = tailSeq(path, tail) + 1;
      this.#prev = sha256(tail);
    }
    mkdirSync(dirname(path), { recursive: true });
    this.#fd = openSync(path, "a", 0o600);
  }

  /**
   * Appends one record (redacted, chained, fsynced) and returns its seq. A call's request and wire
   * body are stored incrementally against recent calls (see incremental.ts), so only new content
   * is serialised, redacted and hashed.
   */
  append(entry: AuditEntry): number {
    if (this.#fd === undefined) throw new Error(`audit tape ${this.path} is closed`);
    if (this.syncError)
      throw new Error(`audit tape ${this.path}: writing to disk failed: ${this.syncError.message}`);
    const chained = { seq: this.#seq, prev: this.#prev, time: this.#now().toISOString(), runId: this.runId };
    const stored =
      entry.kind === "call"
        ? {
            ...entry,
            ...compactCall(entry.request, entry.wire, this.#recent.recent()),
          }
        : entry;
    const text = JSON.stringify({ ...chained, ...stored });
    const redacted = this.redactor.json(text);
    const { line, lineHash } = sealLineHashed(redacted);
    // The next call is compared with this one as the caller sent it (frozen: the same object is the
    // same value); its references then resolve, for a reader, to what this line wrote (redacted).
    if (entry.kind === "call")
      this.#recent.remember(this.#seq, sentRequest(entry.request), freezeDeep(entry.wire));
    // The write is synchronous (a crash of this process after it loses nothing); the fsync that
    // makes it survive a machine crash runs on libuv's thread pool, so the disk flush overlaps the
    // agent's next step instead of delaying this call's answer.
    writeSync(this.#fd, `${line}\n`);
    this.#syncInBackground(this.#fd);
    this.#prev = lineHash;
    return this.#seq++;
  }

  /** Number of records on the tape so far. */
  get length(): number {
    return this.#seq;
  }

  /** Resolves when every record written so far is on disk. */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  /** Flushes to disk and closes. */
  close(): void {
    if (this.#fd === undefined) return;
    fsyncSync(this.#fd);
    closeSync(this.#fd);
    this.#fd = undefined;
  }

  /**
   * One fsync at a time: a record written while one is running is covered by the next, started as
   * soon as the running one ends (so no record waits for more than one fsync after its own).
   */
  #syncInBackground(fd: number): void {
    if (this.#syncing) {
      this.#dirty = true;
      return;
    }
    this.#syncing = true;
    this.#dirty = false;
    const done = new Promise<void>((resolve) => {
      fsync(fd, (error) => {
        // EBADF after close(): close() already synced everything synchronously.
        if (error && error.code !== "EBADF") this.syncError = error;
        this.#syncing = false;
        if (this.#dirty && this.#fd === fd) this.#syncInBackground(fd);
        this.#pending.delete(done);
        resolve();
      });
    });
    this.#pending.add(done);
  }
}

/**
 * The request as sent, frozen: history messages and tool specs are the caller's own (frozen) objects,
 * the arrays holding them are copied, since the caller goes on appending to its history.
 */
function sentRequest(request: TapeRequest): TapeRequest {
  for (const message of request.messages) freezeDeep(message);
  for (const tool of request.tools ?? []) freezeDeep(tool);
  return freezeDeep({
    ...request,
    messages: [...request.messages],
    ...(request.tools ? { tools: [...request.tools] } : {}),
  });
}

function lastLine(path: string): string | undefined {
  const lines = readFileSync(path, "utf8").split("\n");
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines[lines.length - 1];
}

function tailSeq(path: string, line: string): number {
  try {
    const seq = (JSON.parse(line) as { seq?: unknown }).seq;
    if (typeof seq === "number") return seq;
  } catch {
    // fall through to the error below
  }
  throw new Error(
    `audit tape ${path} ends with an unreadable line; run 'scifi audit verify' on the run and do not append to a damaged tape`,
  );
}
