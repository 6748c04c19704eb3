// Apptainer backend: one long-lived `apptainer instance` per run, tools `exec` into it. Runs as the
// calling (non-root) user with user namespaces, exactly as on a cluster: no setuid, no root.
// Limits that need root or delegated cgroups are enforced otherwise: pids and memory with rlimits in
// the exec wrapper, cpus with CPU affinity; docs/apptainer.md explains each gap and what holds instead.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, constants as fsc, readFileSync } from "node:fs";
import {
  access,
  type FileHandle,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
} from "node:fs/promises";
import { availableParallelism, constants as osConstants, tmpdir } from "node:os";
import { delimiter, join, posix } from "node:path";
import { execa, execaSync } from "execa";
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
/** The in-container `timeout` is a backup: it fires this long after the host-side kill. */
const BACKUP_TIMEOUT_SLACK_SEC = 2;
/** The last-resort watchdog (kill the apptainer process group) fires this long after that. */
const HOST_WATCHDOG_SLACK_MS = 5_000;
/** readFile of a container file (outside the task folder) goes through a capped exec. */
const MAX_FILE_BYTES = 512 * 1024 * 1024;
/** After apptainer exits with its pipes still open (a background process holds them), the output
 * is complete once no data came for this long (bounded by PIPE_DRAIN_MAX_MS). */
const PIPE_IDLE_MS = 250;
const PIPE_DRAIN_MAX_MS = 5_000;
const INSTALL_FIX =
  "install Apptainer (https://apptainer.org/docs/admin/main/installation.html), or use the harness: bash scripts/apptainer-harness.sh shell";

/**
 * Inner wrapper run by `sh -c` inside the container: sets rlimits, then runs the command under
 * `timeout -k` so a timeout kills the whole process group. $1 pids, $2 memory KiB, $3 seconds.
 */
const EXEC_WRAPPER = [
  // bash and busybox spell the process limit -u, dash -p; prlimit (util-linux) is the fallback.
  'ulimit -u "$1" 2>/dev/null || ulimit -p "$1" 2>/dev/null || prlimit --pid $$ --nproc="$1" 2>/dev/null ||',
  '  { echo "scifi: cannot set the process limit" >&2; exit 125; }',
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

/**
 * Unprivileged Apptainer cannot set a CPU quota (that needs cgroups), so execs are pinned to
 * `cpus` of the CPUs this process may use, with taskset (util-linux) on the host: the affinity is
 * inherited through apptainer into the container, and `nproc` there says the same. Sandboxes start
 * at different CPUs (by name) so that concurrent ones spread out. No pinning when the sandbox may
 * use every CPU anyway, or when the host has no taskset (then cpus is not enforced: docs/apptainer.md).
 */
async function cpuPinning(cpus: number, name: string): Promise<string[]> {
  const allowed = allowedCpus();
  const want = Math.max(1, Math.ceil(cpus));
  if (allowed.length <= want) return [];
  const taskset = await findOnPath("taskset");
  if (!taskset) return [];
  return [taskset, "-c", pickCpus(allowed, want, name).join(",")];
}

/** `want` of the allowed CPUs, consecutive (wrapping), starting at a place the key decides. */
export function pickCpus(allowed: number[], want: number, key: string): number[] {
  const start = createHash("sha256").update(key).digest().readUInt32BE(0) % allowed.length;
  return Array.from({ length: want }, (_, i) => allowed[(start + i) % allowed.length] as number).sort(
    (a, b) => a - b,
  );
}

/** The CPUs this process may run on (Cpus_allowed_list of /proc/self/status), e.g. "0-3,8". */
function allowedCpus(): number[] {
  const status = existsSync("/proc/self/status") ? readFileSync("/proc/self/status", "utf8") : "";
  const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(status)?.[1];
  if (!list) return Array.from({ length: availableParallelism() }, (_, i) => i);
  return list.split(",").flatMap((range) => {
    const [from = 0, to = from] = range.split("-").map(Number);
    return Array.from({ length: to - from + 1 }, (_, i) => from + i);
  });
}

async function findOnPath(binary: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, binary);
    if (
      dir &&
      (await access(candidate, fsc.X_OK).then(
        () => true,
        () => false,
      ))
    )
      return candidate;
  }
  return undefined;
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
  const pin = await cpuPinning(spec.cpus, name);
  const sandbox = new ApptainerSandbox(ctx, spec, name, stateDir, await findNsInit(ctx, name), pin);
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
  /** The instance's PID-namespace init: orphans of timed-out execs become its children. */
  readonly #nsInit: NsInit | undefined;
  /** `taskset -c LIST` before apptainer for every exec, when `cpus` is fewer than this machine has. */
  readonly #pin: string[];
  #stopping: Promise<void> | undefined;

  constructor(
    ctx: BackendContext,
    spec: SandboxSpec,
    name: string,
    stateDir: string,
    nsInit: NsInit | undefined,
    pin: string[] = [],
  ) {
    this.#ctx = ctx;
    this.spec = spec;
    this.#name = name;
    this.#stateDir = stateDir;
    this.#nsInit = nsInit;
    this.#pin = pin;
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
    const env = { ...gpuEnv(this.spec.gpus), ...this.spec.env, ...options.env };
    // RLIMIT_NPROC is counted per user namespace, i.e. per instance: its own tasks plus pidsLimit.
    const nproc = (this.#nsInit?.baseTasks ?? 0) + this.spec.pidsLimit;
    const inner = [
      "/usr/bin/env",
      ...envAssignments(env),
      "/bin/sh",
      "-c",
      EXEC_WRAPPER,
      "scifi-exec",
      String(nproc),
      String(Math.floor(this.spec.memoryBytes / 1024)),
      `${Math.max(1, timeoutMs) / 1000 + BACKUP_TIMEOUT_SLACK_SEC}`,
      ...argv,
    ];
    const args = ["-q", "exec", "--cleanenv", "--pwd", cwd, `instance://${this.#name}`, ...inner];
    const [bin, ...binArgs] = [...this.#pin, this.#ctx.bin, ...args] as [string, ...string[]];
    const r = await runCapped(bin, binArgs, {
      stdin: options.stdin,
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT,
      timeoutMs,
      onTimeout: (pid) => killExecTree(pid, this.#nsInit),
      watchdogMs: timeoutMs + (BACKUP_TIMEOUT_SLACK_SEC + KILL_GRACE_SEC) * 1000 + HOST_WATCHDOG_SLACK_MS,
    });
    // The backup `timeout` inside exits 124 (TERM worked) or 137 (KILL); either only counts when
    // the time really ran out (a command may exit 124 by itself, or be killed quickly).
    const ranOut = r.durationMs >= timeoutMs * 0.95 && [124, 137, 143].includes(r.exitCode);
    const timedOut = r.timeoutFired || r.watchdogFired || ranOut;
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

/** Tasks (threads included, as RLIMIT_NPROC counts them) in the user namespace `userNs`. */
async function countNamespaceTasks(userNs: string): Promise<number> {
  let tasks = 0;
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const ns = await readlink(`/proc/${entry}/ns/user`).catch(() => "");
    if (ns !== userNs) continue;
    const status = await readFile(`/proc/${entry}/status`, "latin1").catch(() => "");
    tasks += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  }
  return tasks;
}

/** pid -> parent pid of every process, from /proc/PID/stat (which never waits on the target's memory). */
async function processParents(): Promise<Map<number, number>> {
  const parents = new Map<number, number>();
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "latin1").catch(() => "");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (Number.isFinite(ppid)) parents.set(Number(entry), ppid);
  }
  return parents;
}

function descendantsOf(roots: Iterable<number>, parents: Map<number, number>): Set<number> {
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of parents) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const found = new Set<number>();
  const queue = [...roots];
  for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
    if (found.has(pid)) continue;
    found.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

/**
 * Kills a timed-out exec: the apptainer process and all it started, plus every orphan in the
 * instance (processes that left their parent, setsid daemons, fork-bomb debris are re-parented to
 * the namespace init). A fork bomb forks while we kill, so first freeze (SIGSTOP) in sweeps until no
 * new process appears, then SIGKILL the frozen set.
 */
async function killExecTree(rootPid: number, init: NsInit | undefined): Promise<void> {
  const frozen = new Set<number>();
  for (let sweep = 0; sweep < 100; sweep++) {
    const parents = await processParents();
    const orphanRoots = init
      ? [...parents].filter(([p, pp]) => pp === init.pid && !init.own.has(p)).map(([p]) => p)
      : [];
    const targets = descendantsOf([rootPid, ...orphanRoots], parents);
    const fresh = [...targets].filter((pid) => !frozen.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      signalQuietly(pid, "SIGSTOP");
      frozen.add(pid);
    }
  }
  for (const pid of frozen) signalQuietly(pid, "SIGKILL");
}

interface NsInit {
  /** Host pid of the process that is pid 1 in the instance's PID namespace. */
  pid: number;
  /** Its children when the instance started (e.g. a start script): never killed as orphans. */
  own: Set<number>;
  /** Tasks in the instance's user namespace at start (init, FUSE helpers): the NPROC baseline. */
  baseTasks: number;
}

/** Finds the instance's PID-namespace init: the host pid whose NSpid ends in 1 in its tree. */
async function findNsInit(ctx: BackendContext, name: string): Promise<NsInit | undefined> {
  const r = await runApptainer(ctx, ["instance", "list", "--json", name], 30_000).catch(() => undefined);
  const listed = (JSON.parse(r?.stdout || "{}") as { instances?: { pid: number }[] }).instances?.[0]?.pid;
  if (listed === undefined) return undefined;
  const parents = await processParents();
  for (const pid of descendantsOf([listed], parents)) {
    const status = await readFile(`/proc/${pid}/status`, "latin1").catch(() => "");
    const nspid = /^NSpid:\s+([\d\s]+)$/m.exec(status)?.[1]?.trim().split(/\s+/);
    if (nspid && nspid.length > 1 && nspid.at(-1) === "1") {
      const own = new Set([...parents].filter(([, pp]) => pp === pid).map(([p]) => p));
      const userNs = await readlink(`/proc/${pid}/ns/user`).catch(() => "");
      return { pid, own, baseTasks: userNs ? await countNamespaceTasks(userNs) : 0 };
    }
  }
  return undefined;
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already, or not ours
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
  /** At this point onTimeout(pid of apptainer) kills the exec. */
  timeoutMs: number;
  onTimeout: (pid: number) => Promise<void>;
  watchdogMs: number;
}

interface CappedResult {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timeoutFired: boolean;
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

/**
 * Spawns apptainer and collects capped output. Plain spawn rather than execa here: the exec is done
 * when apptainer exits, even if a background process in the container still holds the output pipes
 * (execa would wait for those pipes to close, possibly forever).
 */
async function runCapped(bin: string, args: string[], options: CappedOptions): Promise<CappedResult> {
  const started = performance.now();
  const child = spawn(bin, args, {
    env: apptainerEnv(),
    detached: true, // own process group: the watchdog kills apptainer and everything it started
    stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  const out = new CappedBuffer(options.maxOutputBytes);
  const err = new CappedBuffer(options.maxOutputBytes);
  child.stdout?.on("data", (c: Buffer) => out.push(c));
  child.stderr?.on("data", (c: Buffer) => err.push(c));
  if (options.stdin !== undefined && child.stdin) {
    child.stdin.on("error", () => {}); // the command may exit without reading its input
    child.stdin.end(options.stdin);
  }
  let timeoutFired = false;
  let watchdogFired = false;
  let killing: Promise<void> = Promise.resolve();
  const timer = setTimeout(() => {
    timeoutFired = true;
    if (child.pid !== undefined) killing = options.onTimeout(child.pid).catch(() => {});
  }, options.timeoutMs);
  const watchdog = setTimeout(() => {
    watchdogFired = true;
    killGroup(child.pid);
  }, options.watchdogMs);
  try {
    const exitCode = await exited(child);
    await killing; // the exec's processes are gone before the result says so
    return {
      exitCode: exitCode ?? 137,
      stdout: out.bytes(),
      stderr: err.bytes(),
      stdoutTruncated: out.truncated,
      stderrTruncated: err.truncated,
      timeoutFired,
      watchdogFired,
      durationMs: Math.round(performance.now() - started),
    };
  } finally {
    clearTimeout(timer);
    clearTimeout(watchdog);
  }
}

/**
 * Exit code (signals as 128+n) once the process has exited and its output is read: the pipes close,
 * or (when a leftover background process keeps them open) no data came for PIPE_IDLE_MS.
 */
function exited(child: ChildProcess): Promise<number | null> {
  let lastData = performance.now();
  const touch = (): void => {
    lastData = performance.now();
  };
  child.stdout?.on("data", touch);
  child.stderr?.on("data", touch);
  return new Promise((resolve, reject) => {
    child.once("error", (e: NodeJS.ErrnoException) => {
      reject(
        e.code === "ENOENT"
          ? new SandboxUnavailable(BACKEND, `'${child.spawnfile}' was not found`, INSTALL_FIX)
          : e,
      );
    });
    child.once("exit", (code, signal) => {
      const status = code ?? (signal ? 128 + (osConstants.signals[signal] ?? 0) : null);
      const exitedAt = performance.now();
      let closed = false;
      child.once("close", () => {
        closed = true;
      });
      const poll = setInterval(() => {
        const now = performance.now();
        const quiet = now - lastData >= PIPE_IDLE_MS && now - exitedAt >= PIPE_IDLE_MS;
        if (!closed && !quiet && now - exitedAt < PIPE_DRAIN_MAX_MS) return;
        clearInterval(poll);
        child.stdout?.destroy();
        child.stderr?.destroy();
        resolve(status);
      }, 25);
    });
  });
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
