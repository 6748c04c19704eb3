// Apptainer backend: one long-lived `apptainer instance` per run, tools `exec` into it. Runs as the
// calling (non-root) user with user namespaces, exactly as on a cluster: no setuid, no root.
// Limits that need root or delegated cgroups (pids, memory) are enforced with rlimits in the exec
// wrapper instead; docs/apptainer.md explains each gap and what holds instead.
import { randomUUID } from "node:crypto";
import { constants as fsc } from "node:fs";
import { type FileHandle, mkdir, mkdtemp, open, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { execa, execaSync, type ResultPromise } from "execa";
import type { MountSpec, SandboxSpec } from "../policy/spec.ts";
import {
  type BackendStatus,
  type ExecOptions,
  type ExecResult,
  PathRefused,
  type Sandbox,
  type SandboxBackend,
  SandboxError,
  SandboxUnavailable,
  TRUNCATION_MARKER,
} from "./types.ts";

export interface ApptainerBackendOptions {
  /** The apptainer binary (default `apptainer` on PATH). */
  apptainer?: string;
  /**
   * Folder of SIF files named after Docker references (`scifi-base:bookworm` -> `scifi-base_bookworm.sif`),
   * as `scripts/apptainer-harness.sh sif IMAGE` makes them. Default: env SCIFI_SIF_CACHE, else
   * `/var/cache/scifi/sif`. A spec image that is an absolute `.sif` path is used as is.
   */
  sifDir?: string;
  /** Where per-run private files (scratch images) live. Default: the OS temp folder. */
  stateDir?: string;
  /**
   * Also ask Apptainer for cgroup limits (`--memory`, `--pids-limit`, `--cpus`). Only works where the
   * site delegates cgroups v2 to users (systemd); rlimits are applied either way.
   */
  cgroupLimits?: boolean;
}

const BACKEND = "apptainer";
const NAME_PREFIX = "scifi-";
const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_OUTPUT = 256 * 1024;
/** Seconds `timeout -k` waits after SIGTERM before SIGKILL inside the container. */
const KILL_GRACE_SEC = 2;
/** The host-side watchdog fires this long after the in-container timeout should have. */
const HOST_WATCHDOG_SLACK_MS = 5_000;
/** Marks every process of one exec (inherited environment), for the kill after a timeout. */
const EXEC_ID_VAR = "SCIFI_EXEC_ID";
/** readFile of a container file (outside the task folder) goes through a capped exec. */
const MAX_FILE_BYTES = 512 * 1024 * 1024;
const INSTALL_FIX =
  "install Apptainer (https://apptainer.org/docs/admin/main/installation.html), or use the harness: bash scripts/apptainer-harness.sh shell";

/**
 * Inner wrapper run by `sh -c` inside the container: sets rlimits, then runs the command under
 * `timeout -k` so a timeout kills the whole process group. $1 pids, $2 memory KiB, $3 seconds.
 */
const EXEC_WRAPPER = [
  'ulimit -u "$1" || { echo "scifi: cannot set the process limit" >&2; exit 125; }',
  'if [ "$2" != 0 ]; then ulimit -v "$2" || { echo "scifi: cannot set the memory limit" >&2; exit 125; }; fi',
  `t="$3"; shift 3`,
  `exec timeout -k ${KILL_GRACE_SEC} "$t" "$@"`,
].join("\n");

export function createApptainerBackend(options: ApptainerBackendOptions = {}): SandboxBackend {
  const ctx: BackendContext = {
    bin: options.apptainer ?? "apptainer",
    sifDir: options.sifDir ?? process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif",
    stateDir: options.stateDir ?? tmpdir(),
    cgroupLimits: options.cgroupLimits ?? false,
  };
  return {
    name: BACKEND,
    status: () => apptainerStatus(ctx),
    start: (spec) => startSandbox(ctx, spec),
    prune: (live) => pruneInstances(ctx, live),
  };
}

interface BackendContext {
  bin: string;
  sifDir: string;
  stateDir: string;
  cgroupLimits: boolean;
}

// ---------------------------------------------------------------------------------------------
// Running apptainer itself

/**
 * The environment apptainer is started with: only what it needs to find its own state, never the
 * runner's (API keys live there). `--cleanenv` additionally keeps the container's environment clean.
 */
function apptainerEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  const keep = ["PATH", "HOME", "USER", "LOGNAME", "XDG_RUNTIME_DIR", "TMPDIR", "LANG"];
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    const siteConfig = /^(APPTAINER|SINGULARITY)_/.test(key) && !/^(APPTAINER|SINGULARITY)ENV_/.test(key);
    if (keep.includes(key) || siteConfig) env[key] = value;
  }
  return env;
}

interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs an apptainer subcommand to completion; a missing binary is SandboxUnavailable. */
async function runApptainer(ctx: BackendContext, args: string[], timeoutMs = 120_000): Promise<RunResult> {
  try {
    const r = await execa(ctx.bin, args, {
      env: apptainerEnv(),
      extendEnv: false,
      reject: false,
      stdin: "ignore",
      timeout: timeoutMs,
    });
    if (r.failed && r.exitCode === undefined) throw r;
    return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
  } catch (err) {
    if (isMissingBinary(err))
      throw new SandboxUnavailable(BACKEND, `'${ctx.bin}' was not found`, INSTALL_FIX);
    throw new SandboxError(`apptainer ${args[0]} failed to run: ${(err as Error).message}`);
  }
}

function isMissingBinary(err: unknown): boolean {
  return (err as { code?: string }).code === "ENOENT";
}

async function apptainerStatus(ctx: BackendContext): Promise<BackendStatus> {
  try {
    const r = await runApptainer(ctx, ["--version"], 20_000);
    if (r.exitCode !== 0)
      return { available: false, detail: `apptainer --version failed: ${r.stderr.trim()}`, fix: INSTALL_FIX };
    return { available: true, detail: `${r.stdout.trim()} (SIF cache ${ctx.sifDir})` };
  } catch (err) {
    if (err instanceof SandboxUnavailable) return { available: false, detail: err.message, fix: err.fix };
    return { available: false, detail: (err as Error).message, fix: INSTALL_FIX };
  }
}

// ---------------------------------------------------------------------------------------------
// Instance names and images

/** Instance name for a run: only characters Apptainer accepts; prune maps names back to runs. */
export function instanceName(runId: string): string {
  return NAME_PREFIX + runId.replace(/[^A-Za-z0-9_.-]/g, "_");
}

/** SIF file name for a Docker reference, as scripts/apptainer-harness.sh names it. */
export function sifFileName(image: string): string {
  return `${image.replace(/[/:@]/g, "_")}.sif`;
}

async function resolveSif(ctx: BackendContext, image: string): Promise<string> {
  const path =
    image.endsWith(".sif") && posix.isAbsolute(image) ? image : join(ctx.sifDir, sifFileName(image));
  const found = await stat(path).catch(() => undefined);
  if (!found?.isFile()) {
    throw new SandboxUnavailable(
      BACKEND,
      `no SIF for image '${image}' (looked for ${path})`,
      `bash scripts/apptainer-harness.sh sif ${image}   (or: apptainer build ${path} docker-daemon://${image})`,
    );
  }
  return path;
}

// ---------------------------------------------------------------------------------------------
// Starting an instance

/** Bind sources and targets go into Apptainer's `src:dst:opts` syntax, where `:` and `,` split. */
function checkBindable(path: string, mount: MountSpec): void {
  if (/[:,\n]/.test(path)) {
    throw new PathRefused(
      path,
      `Apptainer cannot bind a path containing ':' or ',' (${mount.reason}); rename it`,
    );
  }
}

/** `--bind` arguments, parents before children so the SAM file lands read-only on top of /task. */
export function bindArgs(mounts: readonly MountSpec[]): string[] {
  const ordered = [...mounts].sort((a, b) => depth(a.target) - depth(b.target));
  return ordered.flatMap((m) => {
    checkBindable(m.source, m);
    checkBindable(m.target, m);
    return ["--bind", `${m.source}:${m.target}:${m.readOnly ? "ro" : "rw"}`];
  });
}

function depth(target: string): number {
  return posix.normalize(target).split("/").filter(Boolean).length;
}

/** Everything `apptainer instance start` gets, except the scratch mount and the SIF/name. */
export function instanceStartArgs(spec: SandboxSpec, cgroupLimits: boolean): string[] {
  const args = [
    "--containall",
    "--cleanenv",
    "--no-home",
    "--no-mount",
    "bind-paths,cwd",
    "--writable-tmpfs",
  ];
  if (!spec.network) args.push("--net", "--network", "none");
  if (spec.gpus > 0) args.push("--nv");
  if (cgroupLimits) {
    args.push(
      "--memory",
      String(spec.memoryBytes),
      "--pids-limit",
      String(spec.pidsLimit),
      "--cpus",
      String(spec.cpus),
    );
  }
  return [...args, ...bindArgs(spec.mounts)];
}

/** A size-limited scratch: an ext3 image file that Apptainer mounts with fuse2fs, unprivileged. */
async function makeScratchImage(dir: string, sizeBytes: number): Promise<string> {
  const image = join(dir, "scratch.ext3");
  const mib = Math.max(1, Math.ceil(sizeBytes / (1024 * 1024)));
  const mkfs = await findMkfs();
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  const r = await execa(mkfs, ["-q", "-F", "-m", "0", "-E", `root_owner=${uid}:${gid}`, image, `${mib}M`], {
    reject: false,
  });
  if (r.exitCode !== 0)
    throw new SandboxError(`could not make the scratch image (${mkfs}): ${String(r.stderr).trim()}`);
  return image;
}

async function findMkfs(): Promise<string> {
  for (const candidate of ["/usr/sbin/mkfs.ext3", "/sbin/mkfs.ext3", "/usr/bin/mkfs.ext3"]) {
    if (await stat(candidate).catch(() => undefined)) return candidate;
  }
  throw new SandboxUnavailable(
    BACKEND,
    "a size-limited scratch needs mkfs.ext3 (e2fsprogs) on this machine",
    "apt-get install -y e2fsprogs",
  );
}

async function startSandbox(ctx: BackendContext, spec: SandboxSpec): Promise<Sandbox> {
  const sif = await resolveSif(ctx, spec.image);
  const name = instanceName(spec.runId);
  const args = ["instance", "start", ...instanceStartArgs(spec, ctx.cgroupLimits)];
  const stateDir = await mkdtemp(join(ctx.stateDir, `${name}-`));
  try {
    if (spec.scratch) {
      const image = await makeScratchImage(stateDir, spec.scratch.sizeBytes);
      args.push("--mount", `type=bind,src=${image},dst=${spec.scratch.target},image-src=/`);
    }
    args.push(sif, name);
    const r = await runApptainer(ctx, ["-q", ...args]);
    if (r.exitCode !== 0) {
      throw new SandboxError(
        `apptainer instance start ${name} failed (exit ${r.exitCode}): ${r.stderr.trim()}`,
      );
    }
  } catch (err) {
    await rm(stateDir, { recursive: true, force: true });
    throw err;
  }
  const sandbox = new ApptainerSandbox(ctx, spec, name, stateDir);
  liveSandboxes.add(sandbox);
  installSignalCleanup();
  return sandbox;
}

// ---------------------------------------------------------------------------------------------
// The sandbox

class ApptainerSandbox implements Sandbox {
  readonly backend = BACKEND;
  readonly spec: SandboxSpec;
  readonly #ctx: BackendContext;
  readonly #name: string;
  readonly #stateDir: string;
  #stopping: Promise<void> | undefined;

  constructor(ctx: BackendContext, spec: SandboxSpec, name: string, stateDir: string) {
    this.#ctx = ctx;
    this.spec = spec;
    this.#name = name;
    this.#stateDir = stateDir;
  }

  async exec(command: string[] | string, options: ExecOptions = {}): Promise<ExecResult> {
    const argv = typeof command === "string" ? ["/bin/sh", "-c", command] : command;
    if (argv.length === 0) throw new SandboxError("exec needs a command: the argv is empty");
    const r = await this.#run(argv, options);
    const marker = r.truncated ? TRUNCATION_MARKER : "";
    const { stdout, stderr } = r;
    return {
      exitCode: r.exitCode,
      stdout: stdout.toString("utf8") + (r.stdoutTruncated ? marker : ""),
      stderr: stderr.toString("utf8") + (r.stderrTruncated ? marker : ""),
      timedOut: r.timedOut,
      truncated: r.truncated,
      durationMs: r.durationMs,
    };
  }

  /** One exec inside the instance, under the rlimit and timeout wrapper; output kept as bytes. */
  async #run(argv: string[], options: ExecOptions): Promise<RawExec> {
    if (this.#stopping) throw new SandboxError(`sandbox ${this.#name} is stopped`);
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const cwd = posix.resolve(this.spec.workdir, options.cwd ?? ".");
    // Every process of this exec inherits the id, so a timeout can find those that left the
    // process group (setsid) and kill them too.
    const execId = randomUUID();
    const env = { ...gpuEnv(this.spec.gpus), ...this.spec.env, ...options.env, [EXEC_ID_VAR]: execId };
    const inner = [
      "/usr/bin/env",
      ...envAssignments(env),
      "/bin/sh",
      "-c",
      EXEC_WRAPPER,
      "scifi-exec",
      String(this.spec.pidsLimit),
      String(Math.floor(this.spec.memoryBytes / 1024)),
      `${Math.max(1, timeoutMs) / 1000}`,
      ...argv,
    ];
    const args = ["-q", "exec", "--cleanenv", "--pwd", cwd, `instance://${this.#name}`, ...inner];
    const r = await runCapped(this.#ctx.bin, args, {
      stdin: options.stdin,
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT,
      watchdogMs: timeoutMs + KILL_GRACE_SEC * 1000 + HOST_WATCHDOG_SLACK_MS,
    });
    // `timeout` exits 124 after SIGTERM worked, 137 after the SIGKILL; either only counts when the
    // time really ran out (a command may exit 124 by itself, or be killed quickly).
    const ranOut = r.durationMs >= timeoutMs * 0.95 && [124, 137, 143].includes(r.exitCode);
    const timedOut = r.watchdogFired || ranOut;
    if (timedOut) await killMarkedProcesses(execId);
    if (!timedOut && r.exitCode === 255 && /^FATAL:/m.test(r.stderr.toString()))
      await this.#assertInstanceAlive();
    return {
      exitCode: r.exitCode,
      stdout: r.stdout,
      stderr: r.stderr,
      stdoutTruncated: r.stdoutTruncated,
      stderrTruncated: r.stderrTruncated,
      truncated: r.stdoutTruncated || r.stderrTruncated,
      timedOut,
      durationMs: r.durationMs,
    };
  }

  /** Exit 255 with FATAL may be the command's own; it is the engine's when the instance is gone. */
  async #assertInstanceAlive(): Promise<void> {
    const names = await listInstances(this.#ctx).catch(() => undefined);
    if (names && !names.includes(this.#name)) {
      throw new SandboxError(`apptainer instance ${this.#name} is no longer running`);
    }
  }

  async readFile(path: string): Promise<Buffer> {
    const route = routeFor(this.spec, path, "read");
    if (route.kind === "host") return readTaskFile(this.spec.taskDir, route, path);
    // Outside the task folder the file lives in the container: read it there, where any link it
    // follows stays inside the container too.
    const r = await this.#run(["cat", "--", route.path], {
      maxOutputBytes: MAX_FILE_BYTES,
      timeoutMs: 120_000,
    });
    if (r.exitCode !== 0) throw new SandboxError(`cannot read '${path}': ${r.stderr.toString().trim()}`);
    if (r.stdoutTruncated)
      throw new SandboxError(`cannot read '${path}': larger than ${MAX_FILE_BYTES} bytes`);
    return r.stdout;
  }

  async writeFile(path: string, data: string | Buffer): Promise<void> {
    const route = routeFor(this.spec, path, "write");
    if (route.kind === "host") return writeTaskFile(this.spec.taskDir, route, path, data);
    const script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"';
    const r = await this.#run(["sh", "-c", script, "scifi-write", route.path], {
      stdin: data,
      timeoutMs: 120_000,
    });
    if (r.exitCode !== 0) throw new SandboxError(`cannot write '${path}': ${r.stderr.toString().trim()}`);
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    liveSandboxes.delete(this);
    try {
      await stopInstance(this.#ctx, this.#name);
    } finally {
      await rm(this.#stateDir, { recursive: true, force: true });
    }
  }

  /** Synchronous last resort for process exit: the instance must not outlive the runner. */
  stopSync(): void {
    stopInstanceSync(this.#ctx, this.#name);
  }
}

interface RawExec {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  truncated: boolean;
  timedOut: boolean;
  durationMs: number;
}

/** Kills every process (host-side view) whose environment carries this exec's id. */
async function killMarkedProcesses(execId: string): Promise<void> {
  const needle = Buffer.from(`\0${EXEC_ID_VAR}=${execId}\0`);
  const pids = (await readdir("/proc").catch(() => [] as string[])).filter((e) => /^\d+$/.test(e));
  for (const pid of pids) {
    const environ = await readFile(`/proc/${pid}/environ`).catch(() => undefined);
    if (!environ) continue;
    if (Buffer.concat([Buffer.from([0]), environ]).includes(needle)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // gone already, or not ours
      }
    }
  }
}

/** Apptainer's --nv shows every GPU; the spec's count is honoured through the CUDA variables. */
function gpuEnv(gpus: number): Record<string, string> {
  if (gpus <= 0) return {};
  const host = process.env.CUDA_VISIBLE_DEVICES?.split(",").filter(Boolean);
  const ids =
    host && host.length > 0 ? host.slice(0, gpus) : Array.from({ length: gpus }, (_, i) => String(i));
  return { CUDA_VISIBLE_DEVICES: ids.join(",") };
}

/** `KEY=value` words for env(1): passed as argv, so values need no quoting and cannot inject. */
function envAssignments(env: Record<string, string>): string[] {
  return Object.entries(env).map(([key, value]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      throw new SandboxError(`invalid environment variable name '${key}': use letters, digits and '_'`);
    }
    return `${key}=${value}`;
  });
}

// ---------------------------------------------------------------------------------------------
// Capped exec of the apptainer process

interface CappedOptions {
  stdin: string | Buffer | undefined;
  maxOutputBytes: number;
  watchdogMs: number;
}

interface CappedResult {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  watchdogFired: boolean;
  durationMs: number;
}

/** Keeps at most `max` bytes of a stream and drains the rest, so the child never blocks. */
class CappedBuffer {
  readonly #chunks: Buffer[] = [];
  #size = 0;
  truncated = false;
  readonly #max: number;
  constructor(max: number) {
    this.#max = max;
  }
  push(chunk: Buffer): void {
    const room = this.#max - this.#size;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.#chunks.push(kept);
    this.#size += kept.length;
  }
  bytes(): Buffer {
    return Buffer.concat(this.#chunks);
  }
}

async function runCapped(bin: string, args: string[], options: CappedOptions): Promise<CappedResult> {
  const started = performance.now();
  let child: ResultPromise;
  try {
    child = execa(bin, args, {
      env: apptainerEnv(),
      extendEnv: false,
      reject: false,
      buffer: false,
      detached: true, // own process group: the watchdog kills apptainer and everything it started
      stdin: options.stdin === undefined ? "ignore" : "pipe",
      encoding: "buffer",
    });
  } catch (err) {
    if (isMissingBinary(err)) throw new SandboxUnavailable(BACKEND, `'${bin}' was not found`, INSTALL_FIX);
    throw err;
  }
  const out = new CappedBuffer(options.maxOutputBytes);
  const err = new CappedBuffer(options.maxOutputBytes);
  child.stdout?.on("data", (c: Buffer) => out.push(c));
  child.stderr?.on("data", (c: Buffer) => err.push(c));
  if (options.stdin !== undefined && child.stdin) {
    child.stdin.on("error", () => {}); // the command may exit without reading its input
    child.stdin.end(options.stdin);
  }
  let watchdogFired = false;
  const watchdog = setTimeout(() => {
    watchdogFired = true;
    killGroup(child.pid);
  }, options.watchdogMs);
  const r = await child;
  clearTimeout(watchdog);
  if (r.failed && r.exitCode === undefined && isMissingBinary(r)) {
    throw new SandboxUnavailable(BACKEND, `'${bin}' was not found`, INSTALL_FIX);
  }
  return {
    exitCode: r.exitCode ?? (watchdogFired ? 137 : -1),
    stdout: out.bytes(),
    stderr: err.bytes(),
    stdoutTruncated: out.truncated,
    stderrTruncated: err.truncated,
    watchdogFired,
    durationMs: Math.round(performance.now() - started),
  };
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

// ---------------------------------------------------------------------------------------------
// Host-side file access that never follows a symlink

type FileRoute = { kind: "host"; dir: string[]; base: string } | { kind: "container"; path: string };

/**
 * Where a container path is read or written: task-folder files on the host (symlink-safe, below),
 * anything else through the container itself. Writes under a read-only mount (the SAM file, a
 * declared `ro` mount) are refused here, before anything touches the disk.
 */
function routeFor(spec: SandboxSpec, path: string, mode: "read" | "write"): FileRoute {
  const absolute = posix.resolve(spec.workdir, path);
  const mount = deepestMount(spec.mounts, absolute);
  if (mode === "write" && mount?.readOnly) {
    throw new PathRefused(path, `'${mount.target}' is mounted read-only (${mount.reason})`);
  }
  if (mount && mount.target === spec.workdir && absolute !== spec.workdir) {
    const parts = posix.relative(spec.workdir, absolute).split("/");
    const base = parts.pop() as string;
    return { kind: "host", dir: parts, base };
  }
  return { kind: "container", path: absolute };
}

function deepestMount(mounts: readonly MountSpec[], absolute: string): MountSpec | undefined {
  let best: MountSpec | undefined;
  for (const m of mounts) {
    const target = posix.normalize(m.target);
    const covers = absolute === target || absolute.startsWith(target === "/" ? "/" : `${target}/`);
    if (covers && (!best || target.length > posix.normalize(best.target).length)) best = m;
  }
  return best;
}

async function readTaskFile(
  taskDir: string,
  route: { dir: string[]; base: string },
  shown: string,
): Promise<Buffer> {
  const dir = await openDirInside(taskDir, route.dir, false, shown);
  try {
    const file = await openNoFollow(dir, route.base, fsc.O_RDONLY, shown);
    try {
      if (!(await file.stat()).isFile()) throw new PathRefused(shown, "not a regular file");
      return await file.readFile();
    } finally {
      await file.close();
    }
  } finally {
    await dir.close();
  }
}

async function writeTaskFile(
  taskDir: string,
  route: { dir: string[]; base: string },
  shown: string,
  data: string | Buffer,
): Promise<void> {
  const dir = await openDirInside(taskDir, route.dir, true, shown);
  try {
    const file = await openNoFollow(dir, route.base, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC, shown);
    try {
      if (!(await file.stat()).isFile()) throw new PathRefused(shown, "not a regular file");
      await file.writeFile(data);
    } finally {
      await file.close();
    }
  } finally {
    await dir.close();
  }
}

/**
 * Opens the task-folder subdirectory `parts` one component at a time, each relative to the already
 * open parent (/proc/self/fd) with O_NOFOLLOW: a symlink anywhere on the way is refused, and the
 * container swapping a folder for a link mid-walk cannot redirect the host either.
 */
async function openDirInside(
  taskDir: string,
  parts: string[],
  create: boolean,
  shown: string,
): Promise<FileHandle> {
  const dirFlags = fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW;
  let handle = await open(taskDir, dirFlags);
  try {
    for (const part of parts) {
      const child = `/proc/self/fd/${handle.fd}/${part}`;
      if (create) await mkdir(child).catch((e: NodeJS.ErrnoException) => ignoreExists(e));
      const next = await open(child, dirFlags).catch((e: NodeJS.ErrnoException) => {
        throw refusalFor(e, shown, part);
      });
      await handle.close();
      handle = next;
    }
    return handle;
  } catch (err) {
    await handle.close().catch(() => {});
    throw err;
  }
}

async function openNoFollow(
  dir: FileHandle,
  base: string,
  flags: number,
  shown: string,
): Promise<FileHandle> {
  return open(`/proc/self/fd/${dir.fd}/${base}`, flags | fsc.O_NOFOLLOW | fsc.O_NONBLOCK, 0o644).catch(
    (e: NodeJS.ErrnoException) => {
      throw refusalFor(e, shown, base);
    },
  );
}

function ignoreExists(e: NodeJS.ErrnoException): void {
  if (e.code !== "EEXIST") throw e;
}

function refusalFor(e: NodeJS.ErrnoException, shown: string, part: string): Error {
  if (e.code === "ELOOP" || e.code === "ENOTDIR" || e.code === "EMLINK") {
    return new PathRefused(
      shown,
      `'${part}' is a symlink or not a folder; scifi never follows links from the task folder`,
    );
  }
  return e;
}

// ---------------------------------------------------------------------------------------------
// Listing, stopping, pruning

async function listInstances(ctx: BackendContext): Promise<string[]> {
  const r = await runApptainer(ctx, ["instance", "list", "--json"], 30_000);
  if (r.exitCode !== 0) throw new SandboxError(`apptainer instance list failed: ${r.stderr.trim()}`);
  const parsed = JSON.parse(r.stdout || "{}") as { instances?: { instance: string }[] };
  return (parsed.instances ?? []).map((i) => i.instance);
}

/** Idempotent: an instance that is already gone is fine. */
async function stopInstance(ctx: BackendContext, name: string): Promise<void> {
  const r = await runApptainer(ctx, ["-q", "instance", "stop", "--force", name], 60_000);
  if (r.exitCode === 0 || /no instance found|not found/i.test(r.stderr)) return;
  const still = await listInstances(ctx).catch(() => [name]);
  if (still.includes(name))
    throw new SandboxError(`apptainer instance stop ${name} failed: ${r.stderr.trim()}`);
}

function stopInstanceSync(ctx: BackendContext, name: string): void {
  try {
    execaSync(ctx.bin, ["-q", "instance", "stop", "--force", name]);
  } catch {
    // best effort at exit
  }
}

async function pruneInstances(ctx: BackendContext, live: ReadonlySet<string> = new Set()): Promise<string[]> {
  const liveNames = new Set([...live].map(instanceName));
  const stale = (await listInstances(ctx)).filter((n) => n.startsWith(NAME_PREFIX) && !liveNames.has(n));
  for (const name of stale) await stopInstance(ctx, name);
  await removeStaleStateDirs(ctx, liveNames);
  return stale;
}

/** Scratch images of runs that died without stop(): `<stateDir>/scifi-<run>-XXXXXX`. */
async function removeStaleStateDirs(ctx: BackendContext, liveNames: ReadonlySet<string>): Promise<void> {
  const entries = await readdir(ctx.stateDir).catch(() => [] as string[]);
  const inUse = new Set([...liveSandboxes].map((s) => s.spec.runId).map(instanceName));
  for (const entry of entries) {
    const owner = entry.match(/^(scifi-.+)-[A-Za-z0-9]{6}$/)?.[1];
    if (!owner || liveNames.has(owner) || inUse.has(owner)) continue;
    if (!(await stat(join(ctx.stateDir, entry, "scratch.ext3")).catch(() => undefined))) continue;
    await rm(join(ctx.stateDir, entry), { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Cleanup when the runner is interrupted

const liveSandboxes = new Set<ApptainerSandbox>();
let signalCleanupInstalled = false;

/** On SIGINT/SIGTERM stop every live instance, then let the signal take its default course. */
function installSignalCleanup(): void {
  if (signalCleanupInstalled) return;
  signalCleanupInstalled = true;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const handler = async (): Promise<void> => {
      process.off(signal, handler);
      await Promise.allSettled([...liveSandboxes].map((s) => s.stop()));
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, handler);
  }
  process.on("exit", () => {
    for (const s of liveSandboxes) s.stopSync();
  });
}
