// The audit tape: one append-only JSONL file per run, one hash-chained record a line, fsynced per
// record so a crash loses at most the call in flight. Every string is redacted before writing.
//
// One writer per run: the run loop owns the AuditTape and all LLM calls of the run go through it
// (writes are synchronous, so concurrent calls inside one process still produce a valid chain).
// The run lock (runner/run/task-folder/run-lock.ts) keeps a second process off a live run; two processes
// appending to the same tape would break the chain, and `verifyTape` would report it.
//
// A record is written whole or not at all: a failed or short write (a full disk) is cut back to the
// last complete line and throws RecordWriteFailed (runner/atomic-write.ts); the tape stays usable
// and a resumed run continues it once there is space. `anchor()` gives the head to record outside
// the tape (state.json, history) at every checkpoint; with a site audit key (runner/audit/key.ts)
// every line also carries a MAC.
import {
  closeSync,
  existsSync,
  fstatSync,
  fsync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
} from "node:fs";
import { dirname } from "node:path";
import { appendWhole } from "../atomic-write.ts";
import { freezeDeep } from "../frozen.ts";
import { sha256 } from "../sha256.ts";
import { sealLineHashed } from "./chain.ts";
import { compactCall, TapeExpander } from "./incremental.ts";
import { auditKeyFromEnv } from "./key.ts";
import { Redactor } from "./redact.ts";
import type { AuditEntry, AuditHead, TapeRequest } from "./types.ts";

/** How many recent calls a new call's request may reference (covers interleaved roles; a streaming reader keeps as many). */
export const RECENT_CALLS = 6;

export interface AuditTapeOptions {
  runId: string;
  redactor?: Redactor;
  /** Clock override for tests. */
  now?: () => Date;
  /**
   * The site's audit key: every line gets a MAC under it. Default: the environment's
   * (SCIFI_AUDIT_KEY_FILE or SCIFI_AUDIT_KEY, see key.ts); null: none.
   */
  key?: Buffer | null;
}

export class AuditTape {
  readonly path: string;
  readonly runId: string;
  readonly redactor: Redactor;
  #fd: number | undefined;
  #seq: number;
  #prev: string | null;
  /** Bytes of the tape up to its last complete line (a failed write is cut back to this). */
  #size: number;
  /** Records were written since the last anchor() (which fsyncs before giving the head). */
  #unanchored = false;
  readonly #key: Buffer | undefined;
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
    this.#key = options.key === undefined ? auditKeyFromEnv() : (options.key ?? undefined);
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
    this.#size = fstatSync(this.#fd).size;
  }

  /** Whether lines get a MAC (a site audit key is set). */
  get keyed(): boolean {
    return this.#key !== undefined;
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
    const { line, lineHash } = sealLineHashed(redacted, this.#key);
    // The write is synchronous (a crash of this process after it loses nothing); the fsync that
    // makes it survive a machine crash runs on libuv's thread pool, so the disk flush overlaps the
    // agent's next step instead of delaying this call's answer. A failed or short write is cut
    // back to the last complete line (RecordWriteFailed), and nothing below changes.
    const data = Buffer.from(`${line}\n`, "utf8");
    appendWhole(this.#fd, data, this.#size, this.path);
    this.#size += data.length;
    // The next call is compared with this one as the caller sent it (frozen: the same object is the
    // same value); its references then resolve, for a reader, to what this line wrote (redacted).
    if (entry.kind === "call")
      this.#recent.remember(this.#seq, sentRequest(entry.request), freezeDeep(entry.wire));
    this.#syncInBackground(this.#fd);
    this.#unanchored = true;
    this.#prev = lineHash;
    return this.#seq++;
  }

  /** The last record's seq and line hash; undefined while the tape is empty. */
  head(): AuditHead | undefined {
    if (this.#seq === 0 || this.#prev === null) return undefined;
    return { seq: this.#seq - 1, hash: this.#prev };
  }

  /**
   * The head to record outside the tape (state.json, history) at a checkpoint: the tape is fsynced
   * first, so a recorded head never names a record a machine crash could still lose.
   */
  anchor(): AuditHead | undefined {
    if (this.#unanchored && this.#fd !== undefined) {
      fsyncSync(this.#fd);
      this.#unanchored = false;
    }
    return this.head();
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
    const fd = this.#fd;
    this.#fd = undefined;
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
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
