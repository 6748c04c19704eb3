// The one sandbox contract every backend (docker, apptainer) implements, and its errors.
// Backends are registered by name in runner/sandbox/registry.ts and share test/sandbox/conformance.ts.

import type { SandboxSpec } from "../policy/spec.ts";
import { visible } from "../terminal-text.ts";

export interface ExecOptions {
  /** Container path; defaults to the task folder (`/task`). */
  cwd?: string;
  env?: Record<string, string>;
  /** Kill the process after this many ms (default 120 000). The result then has `timedOut: true`. */
  timeoutMs?: number;
  stdin?: string | Buffer;
  /** Cap on each of stdout/stderr (default 256 KiB); beyond it the text ends with TRUNCATION_MARKER. */
  maxOutputBytes?: number;
  /**
   * Aborting kills the command and everything it started, as a timeout does (the result then has
   * `timedOut: false` and the exit code of the kill). The quota guard (guard.ts) uses it.
   */
  signal?: AbortSignal;
}

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  truncated: boolean;
  durationMs: number;
}

export const TRUNCATION_MARKER = "\n[... output truncated by scifi: limit reached ...]\n";

/**
 * A running sandbox. Error contract:
 * - a command that fails is NOT an error: it is an ExecResult with a non-zero exitCode;
 * - a timeout is an ExecResult with `timedOut: true` (the process is really killed);
 * - the engine itself failing throws SandboxError; an engine that is not there throws SandboxUnavailable;
 * - readFile/writeFile of a path outside the task folder or reached through a symlink out of it
 *   throws PathRefused.
 */
export interface Sandbox {
  readonly backend: string;
  readonly spec: SandboxSpec;
  /** argv is run as is; a string is run as a shell script (`sh -c`). */
  exec(command: string[] | string, options?: ExecOptions): Promise<ExecResult>;
  /** Container path (absolute, or relative to the task folder). */
  readFile(path: string): Promise<Buffer>;
  writeFile(path: string, data: string | Buffer): Promise<void>;
  /**
   * Always safe to call, also twice and after errors. Every started sandbox (guard.ts) then gives a
   * lent task folder back to its owners and clears setuid/setgid bits in it.
   */
  stop(): Promise<void>;
  /**
   * The task folder's quota state after the last exec/writeFile: the QuotaExceeded that call threw
   * while the folder is still over the limit, undefined when under it (or no quota applies).
   */
  quotaExceeded?(): QuotaExceeded | undefined;
  /**
   * Entries of the task folder a root-run scifi did not lend to the sandbox user (hard-linked
   * files, other users' entries, special files; runner/policy/lending.ts): the sandbox can at most
   * read them. Empty or absent when nothing was lent.
   */
  notLent?(): readonly { path: string; why: string }[];
  /**
   * Whether the sandbox itself still runs (its container or instance), asked after an engine error
   * or a command ended by a signal: a sandbox killed from outside is not a failed command.
   */
  alive?(): Promise<boolean>;
  /**
   * After alive() said false: whether what ran in the sandbox may have ended it (AE-8), so the death
   * counts against that, never as the infrastructure's: Docker, when the container's own memory
   * limit killed it (OOMKilled: a tmpfs filled past the limit takes PID 1 too); Apptainer, always
   * (the instance's init handles signals, so its own processes can end it). Absent: never.
   */
  endedFromInside?(): Promise<boolean>;
  /**
   * The PID namespace of the sandbox's processes as the host's /proc names it ("pid:[N]"), for the
   * quota's count of deleted files they hold open (held-files.ts); undefined when it cannot be read.
   */
  pidNamespace?(): Promise<string | undefined>;
  /**
   * Stops the sandbox on purpose (a run waiting for a person: nothing runs meanwhile); the next call
   * starts a fresh one for the same phase. Offered by the loop's revivable phase sandbox.
   */
  suspend?(): Promise<void>;
  /** After suspend: starts the fresh sandbox now rather than at the next call. */
  resume?(): Promise<void>;
}

export interface BackendStatus {
  available: boolean;
  /** Engine version or why it is unavailable. */
  detail: string;
  /** The one command that fixes it, when unavailable. */
  fix?: string;
}

export interface SandboxBackend {
  readonly name: string;
  status(): Promise<BackendStatus>;
  start(spec: SandboxSpec): Promise<Sandbox>;
  /**
   * Stops sandboxes left behind by dead runners of `scope.home`: only a sandbox whose recorded owner
   * (host, pid, process start time, home) is this home's and is gone, and whose run is not in
   * `scope.liveRunIds` nor live in this process. Another home's, a live owner's and one without an
   * owner record are kept. Returns what was removed.
   */
  prune(scope: PruneScope): Promise<string[]>;
}

export interface PruneScope {
  /** The scifi home doing the prune (absolute or relative to the current folder). */
  home: string;
  /** Runs that are live elsewhere (a daemon's workers): kept whatever their owner says. */
  liveRunIds?: ReadonlySet<string>;
}

/** Who started a sandbox, recorded at start (Docker labels, an Apptainer record file). */
export interface SandboxOwner {
  host: string;
  pid: number;
  /** The process's start time in clock ticks since boot: a recycled pid does not share it. */
  procStart?: string;
  /** The scifi home (resolved); absent when the spec named none. */
  home?: string;
}

export class SandboxError extends Error {
  override name = "SandboxError";
}

export class SandboxUnavailable extends SandboxError {
  override name = "SandboxUnavailable";
  readonly backend: string;
  readonly fix: string | undefined;
  constructor(backend: string, detail: string, fix?: string) {
    super(`sandbox backend '${backend}' is unavailable: ${detail}${fix ? `\n  fix: ${fix}` : ""}`);
    this.backend = backend;
    this.fix = fix;
  }
}

/**
 * The engine is there but the sandbox could not be started (its container, network or instance):
 * resuming cannot help until the cause is fixed (the run's error.json says `start`).
 */
export class SandboxStartFailed extends SandboxError {
  override name = "SandboxStartFailed";
}

export class PathRefused extends SandboxError {
  override name = "PathRefused";
  readonly path: string;
  constructor(path: string, reason: string) {
    // The path is the agent's or the user's: a newline or an escape in it is shown, never acted on.
    super(`refused path '${visible(path)}': ${visible(reason)}`);
    this.path = path;
  }
}

/**
 * The task folder grew past what the run may add to it (site policy `maxTaskFolder`, measured as
 * allocated blocks): exec (the command is killed) and writeFile (nothing written) throw it. The loop
 * ends the run when it persists (Sandbox.quotaExceeded()).
 */
export class QuotaExceeded extends SandboxError {
  override name = "QuotaExceeded";
  readonly usedBytes: number;
  readonly limitBytes: number;
  constructor(message: string, usedBytes: number, limitBytes: number) {
    super(message);
    this.usedBytes = usedBytes;
    this.limitBytes = limitBytes;
  }
}
