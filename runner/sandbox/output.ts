// Shared by every sandbox backend: output capping with the truncation marker, the in-container
// timeout wrapper and its exit-code reading, and small polling helpers. Keeping these in one place
// means Docker and Apptainer cap, time out and report in exactly the same way.
import { TRUNCATION_MARKER } from "./types.ts";

/** Default cap on each of stdout/stderr. */
export const DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024;
/** Default per-exec timeout. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Seconds `timeout -k` waits after SIGTERM before it sends SIGKILL. */
export const KILL_GRACE_SEC = 2;
/** Exit codes of `timeout`: 124 (TERM worked), 137 (KILL needed), 143 (TERM reached the wrapper). */
const TIMEOUT_EXIT_CODES = new Set([124, 137, 143]);

/** Collects a stream's bytes up to a cap; counts what it dropped so the result can say so. */
export class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;
  private readonly maxBytes: number;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  push(chunk: Buffer): void {
    const room = this.maxBytes - this.kept;
    if (room <= 0) {
      this.dropped += chunk.length;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
    this.dropped += chunk.length - part.length;
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  /** Raw bytes kept (no marker): for file transfers, where a marker would corrupt the data. */
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /** Text kept, with TRUNCATION_MARKER appended when anything was dropped. */
  text(): string {
    const body = this.bytes().toString("utf8");
    return this.truncated ? body + TRUNCATION_MARKER : body;
  }
}

/** A string command runs as a shell script; an argv runs as is. */
export function toArgv(command: string[] | string): string[] {
  if (typeof command === "string") return ["sh", "-c", command];
  if (command.length === 0) throw new TypeError("exec: the argv is empty; pass a program name first");
  return command;
}

/**
 * Wraps argv in GNU `timeout`, which runs it in its own process group and kills the whole group
 * (TERM, then KILL after the grace): Docker's exec API has no kill, so the deadline lives inside.
 */
export function withTimeout(argv: string[], timeoutMs: number): string[] {
  const seconds = Math.max(0.1, timeoutMs / 1000);
  return ["timeout", "-k", `${KILL_GRACE_SEC}s`, `${seconds.toFixed(3)}s`, ...argv];
}

/**
 * Whether an exec ended because of its deadline: a timeout exit code is trusted only once the
 * deadline has passed, so a program that exits 137 on its own (OOM kill) is not called a timeout.
 */
export function endedByTimeout(exitCode: number, elapsedMs: number, timeoutMs: number): boolean {
  return TIMEOUT_EXIT_CODES.has(exitCode) && elapsedMs >= timeoutMs - 50;
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Polls `probe` until it returns a value other than undefined, or throws after `limitMs`. */
export async function pollUntil<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  limitMs: number,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${limitMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
