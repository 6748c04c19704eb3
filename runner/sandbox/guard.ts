// What every sandbox gets on top of its backend, whatever the engine (trust.md rules 4 and 5):
// - never uid 0: a spec asking for root is refused; a root-run scifi lends the task folder to the
//   unprivileged sandbox user for the sandbox's life and gives it back at stop (owners as before,
//   new entries to the task folder's owner); the lend's record is on disk until then, so a lend
//   whose process died is given back before the folder is lent again (policy/lent-record.ts);
// - no privilege leaves: stop() clears setuid/setgid bits in the task folder (in the give back's walk
//   when it was lent) and in read-write mounts, after the sandbox is gone;
// - a disk quota on the task folder (allocated blocks, no link followed, bounded walk, plus deleted
//   files the sandbox's processes hold open on its device): measured after every exec and
//   writeFile, and every quarter second during an exec, whose command is killed when over.
// Backends wrap their start with `startGuarded`; nothing here knows an engine.

import { stat } from "node:fs/promises";
import {
  clearPrivilegeBits,
  forgetLend,
  lendRecorded,
  measureTaskFolder,
  type OwnershipRecord,
  returnTaskFolder,
  routePath,
  WalkLimitExceeded,
} from "../policy/host-paths.ts";
import type { SandboxSpec } from "../policy/spec.ts";
import { type HeldUsage, heldDeletedFiles } from "./held-files.ts";
import { trackLive } from "./live.ts";
import {
  type ExecOptions,
  type ExecResult,
  QuotaExceeded,
  type Sandbox,
  SandboxError,
  SandboxUnavailable,
} from "./types.ts";

export interface GuardOptions {
  /** Backend name, for messages. */
  backend: string;
  /**
   * The backend's processes run as the calling process's uid whatever spec.user says (Apptainer
   * without setuid): then a root-run scifi is refused, as the sandbox would be root.
   */
  runsAsCaller?: boolean;
  /**
   * How often a running exec's task folder is measured against the quota (ms). Default 250: a
   * writer overshoots by what it writes in one period (about 1.3 GiB a second with dd here).
   */
  pollMs?: number;
}

/** Starts a sandbox through `start` with the guards above; undoes the lending if the start fails. */
export async function startGuarded(
  spec: SandboxSpec,
  start: (spec: SandboxSpec) => Promise<Sandbox>,
  options: GuardOptions,
): Promise<Sandbox> {
  const caller = process.getuid?.() ?? -1;
  if (options.runsAsCaller && caller === 0) {
    throw new SandboxUnavailable(
      options.backend,
      "scifi runs as root, and this backend runs the sandbox as the calling user: the sandbox would be root",
      "run scifi as a normal user (on a cluster: as yourself), or use the docker backend, which runs the sandbox as the site's sandboxUser",
    );
  }
  if (!options.runsAsCaller && spec.user.uid === 0) {
    throw new SandboxError(
      `refused to start a sandbox as uid 0 (root) for run ${spec.runId}: a sandbox always runs as an unprivileged uid (site policy sandboxUser when scifi runs as root)`,
    );
  }
  // Only root can lend; a normal user's sandbox runs as that user and owns the folder already.
  const lent =
    caller === 0 && !options.runsAsCaller
      ? await lendRecorded(spec.taskDir, spec.user).catch((error: unknown) => {
          // The cause is kept: a getfacl that failed on the agent's names is the task's failure
          // (runner/run/task-folder/task-folder-problem.ts), an engine that failed is not.
          throw Object.assign(
            new SandboxError(`cannot lend the task folder to uid ${spec.user.uid}: ${messageOf(error)}`),
            { cause: error },
          );
        })
      : undefined;
  try {
    let quota: Quota | undefined;
    if (spec.taskFolderQuota) {
      const base = spec.taskFolderQuota.baseBytes ?? (await measureTaskFolder(spec.taskDir)).allocatedBytes;
      quota = {
        base,
        maxAdd: spec.taskFolderQuota.maxAddBytes,
        limit: base + spec.taskFolderQuota.maxAddBytes,
        device: (await stat(spec.taskDir)).dev,
      };
    }
    const inner = await start(spec);
    return new GuardedSandbox(inner, lent, quota, options.pollMs ?? 250);
  } catch (error) {
    // The start's error is the one to act on; a give back that failed too is said with it.
    const back = lent
      ? await returnTaskFolder(lent).then(
          () => forgetLend(spec.taskDir),
          (e: unknown) => e,
        )
      : undefined;
    if (back === undefined) throw error;
    throw new SandboxError(
      `${messageOf(error)}; and the task folder could not be given back from uid ${spec.user.uid} completely: ${messageOf(back)} (chown -R it)`,
    );
  }
}

interface Quota {
  base: number;
  maxAdd: number;
  /** base + maxAdd: the most the folder may take. */
  limit: number;
  /** The task folder's st_dev: deleted files held open on it count too (held-files.ts). */
  device: number;
}

class GuardedSandbox implements Sandbox {
  readonly backend: string;
  readonly spec: SandboxSpec;
  readonly #inner: Sandbox;
  readonly #lent: OwnershipRecord | undefined;
  readonly #quota: Quota | undefined;
  readonly #pollMs: number;
  #exceeded: QuotaExceeded | undefined;
  #measuring: Promise<QuotaExceeded | undefined> | undefined;
  /** The task folder's size at the last measurement (undefined before the first). */
  #lastUsed: number | undefined;
  /** Why the last measurement could not count the whole folder (it then counts as over). */
  #unmeasured: string | undefined;
  /** Deleted files held open at the last measurement (counted in #lastUsed). */
  #held: HeldUsage | undefined;
  /** How long the last measurement took (ms): it stretches the poll period for big folders. */
  #walkMs = 0;
  #stopping: Promise<void> | undefined;
  readonly #untrack: () => void;

  constructor(inner: Sandbox, lent: OwnershipRecord | undefined, quota: Quota | undefined, pollMs: number) {
    this.#inner = inner;
    this.backend = inner.backend;
    this.spec = inner.spec;
    this.#lent = lent;
    this.#quota = quota;
    this.#pollMs = pollMs;
    // On SIGINT/SIGTERM the live registry stops this too: the folder is given back, bits cleared.
    this.#untrack = trackLive({ runId: inner.spec.runId, stop: () => this.stop() });
  }

  quotaExceeded(): QuotaExceeded | undefined {
    return this.#exceeded;
  }

  alive(): Promise<boolean> {
    return this.#inner.alive?.() ?? Promise.resolve(true);
  }

  endedFromInside(): Promise<boolean> {
    return this.#inner.endedFromInside?.() ?? Promise.resolve(false);
  }

  async exec(command: string[] | string, options: ExecOptions = {}): Promise<ExecResult> {
    if (!this.#quota) return this.#inner.exec(command, options);
    const abort = new AbortController();
    const forward = () => abort.abort(options.signal?.reason);
    if (options.signal?.aborted) forward();
    options.signal?.addEventListener("abort", forward, { once: true });
    // A folder already over the limit (the agent is cleaning up) kills only a command that adds to it.
    const before = this.#lastUsed;
    let killed: QuotaExceeded | undefined;
    /** What was held open when the command was killed (its end freed it). */
    let killedHeld: HeldUsage | undefined;
    let running = true;
    // The wait between measurements ends early when the exec does: an exec costs no extra poll period.
    let wake = () => {};
    const tick = () =>
      new Promise<void>((done) => {
        // A big folder takes long to walk: then wait longer, so walking costs at most ~1/4 of a CPU.
        const timer = setTimeout(done, Math.max(this.#pollMs, 4 * this.#walkMs));
        wake = () => {
          clearTimeout(timer);
          done();
        };
      });
    const poller = (async () => {
      while (running) {
        await tick();
        if (!running) return;
        const over = await this.#measure().catch(() => undefined);
        if (over && running && (before === undefined || over.usedBytes > before)) {
          killed = over;
          killedHeld = this.#held;
          abort.abort(over);
          return;
        }
      }
    })();
    let result: ExecResult;
    try {
      result = await this.#inner.exec(command, { ...options, signal: abort.signal });
    } finally {
      running = false;
      wake();
      options.signal?.removeEventListener("abort", forward);
    }
    await poller;
    // Measured again once the command is over, also after a kill: what a killed writer had in
    // flight lands after the measurement that killed it, and the next call compares with this.
    const now = await this.#measure();
    if (killed) {
      const grew = (now?.usedBytes ?? 0) > killed.usedBytes;
      const used = grew && now ? now.usedBytes : killed.usedBytes;
      const held = grew ? this.#held : killedHeld;
      const error = quotaError(this.#quota, used, "the command was killed", this.#unmeasured, held);
      this.#exceeded = now ? error : undefined;
      throw error;
    }
    this.#exceeded = now && quotaError(this.#quota, now.usedBytes, "", this.#unmeasured, this.#held);
    if (!this.#exceeded) return result;
    // This call went past the limit (or further past it): it fails. A call that added nothing while
    // the folder was already over (the agent looking for what to delete) returns, and says so.
    if (before === undefined || this.#exceeded.usedBytes > before) throw this.#exceeded;
    return { ...result, stderr: `${result.stderr}\n[scifi: ${this.#exceeded.message}]\n` };
  }

  readFile(path: string): Promise<Buffer> {
    return this.#inner.readFile(path);
  }

  async writeFile(path: string, data: string | Buffer): Promise<void> {
    const route = routePath(this.spec, path);
    if (this.#quota && route.where === "task") {
      const now = await this.#usage();
      const size = typeof data === "string" ? Buffer.byteLength(data) : data.length;
      if (now + size > this.#quota.limit) {
        this.#exceeded = quotaError(
          this.#quota,
          now + size,
          `nothing was written to ${path}`,
          this.#unmeasured,
          this.#held,
        );
        throw this.#exceeded;
      }
    }
    // (A root runner's host-side write gives the file to the sandbox user: core.ts writeSandboxFile.)
    await this.#inner.writeFile(path, data);
    // It fitted under the limit (checked above), so the folder is under it now; a write elsewhere
    // (/tmp, a declared mount) leaves the task folder as it was.
    if (this.#quota && route.where === "task") this.#exceeded = undefined;
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const errors: unknown[] = [];
    await this.#inner.stop().catch((e: unknown) => errors.push(e));
    // Only now, with no process of the sandbox left to race the walks. Each walk does all it can
    // before it fails (WalkIncomplete), and a failure fails the stop with what was left undone.
    // The give back clears set-id bits in the same walk: the task folder needs no second one then.
    let returned = false;
    if (this.#lent)
      returned = await returnTaskFolder(this.#lent).then(
        () => {
          forgetLend(this.spec.taskDir);
          return true;
        },
        (e: unknown) => {
          errors.push(
            new SandboxError(
              `cannot give the task folder ${this.spec.taskDir} back from uid ${this.spec.user.uid} completely: ${messageOf(e)}; what could not be reached may still belong to that user (chown -R it, and remove what you do not need)`,
            ),
          );
          return false;
        },
      );
    // The task folder and every other folder the sandbox could write (read-write declared mounts).
    const writable = new Set([
      this.spec.taskDir,
      ...this.spec.mounts.filter((m) => !m.readOnly).map((m) => m.source),
    ]);
    if (returned) writable.delete(this.spec.taskDir);
    for (const folder of writable) {
      await clearPrivilegeBits(folder).catch((e: unknown) => {
        if ((e as NodeJS.ErrnoException).code === "ENOTDIR") return; // a single file mounted: nothing below it
        errors.push(
          new SandboxError(
            `cannot clear setuid/setgid bits in ${folder} completely: ${messageOf(e)}; find what is left with: find ${folder} -perm /6000`,
          ),
        );
      });
    }
    this.#untrack();
    if (errors.length > 0) throw errors[0];
  }

  /**
   * Entries of the task folder not lent to the sandbox user (hard-linked, another user's, special
   * files): the sandbox can at most read them. Empty when nothing was lent (scifi not root).
   */
  notLent(): readonly { path: string; why: string }[] {
    return this.#lent?.kept ?? [];
  }

  /**
   * The folder's allocated bytes now, plus the deleted files on its device that the sandbox's
   * processes still hold (no walk sees them, the disk does); a folder too big (or impossible) to walk
   * counts as over the limit.
   */
  async #usage(): Promise<number> {
    const started = performance.now();
    try {
      const used = (await measureTaskFolder(this.spec.taskDir)).allocatedBytes;
      const ns = this.#quota ? await this.#inner.pidNamespace?.() : undefined;
      const held = ns && this.#quota ? await heldDeletedFiles(ns, new Set([this.#quota.device])) : undefined;
      this.#held = held;
      this.#unmeasured = undefined;
      return used + (held?.bytes ?? 0);
    } catch (error) {
      if (error instanceof WalkLimitExceeded) {
        this.#unmeasured = error.reason;
        return Number.POSITIVE_INFINITY;
      }
      throw error;
    } finally {
      this.#walkMs = performance.now() - started;
    }
  }

  /** QuotaExceeded when the folder is over the limit now; one measurement at a time. */
  #measure(): Promise<QuotaExceeded | undefined> {
    const quota = this.#quota;
    if (!quota) return Promise.resolve(undefined);
    this.#measuring ??= this.#usage()
      .then((used) => {
        this.#lastUsed = used;
        return used > quota.limit ? quotaError(quota, used, "", this.#unmeasured, this.#held) : undefined;
      })
      .finally(() => {
        this.#measuring = undefined;
      });
    return this.#measuring;
  }
}

function quotaError(
  quota: Quota,
  used: number,
  what: string,
  unmeasured?: string,
  held?: HeldUsage,
): QuotaExceeded {
  const heldText =
    held && held.files > 0
      ? ` (${formatBytes(held.bytes)} of it in ${held.files} deleted file${held.files === 1 ? "" : "s"} that a process of the sandbox still holds open: end that process to free it)`
      : "";
  const usedText = Number.isFinite(used)
    ? `${formatBytes(used)}${heldText}`
    : `more than can be measured (${unmeasured ?? "too many files"})`;
  return new QuotaExceeded(
    `disk quota of the task folder exceeded: it takes ${usedText}, and this run may add at most ${formatBytes(quota.maxAdd)} to the ${formatBytes(quota.base)} it held at the start (site policy maxTaskFolder)${what ? `; ${what}` : ""}. Delete files you do not need (or write large temporary data to /tmp or /scratch); the run ends if the folder stays over the limit.`,
    used,
    quota.limit,
  );
}

function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
