// Apptainer backend: one long-lived `apptainer instance` per run, tools `exec` into it. Runs as the
// calling (non-root) user with user namespaces, exactly as on a cluster: no setuid, no root.
// Limits that need root or delegated cgroups are enforced otherwise: pids and memory with rlimits in
// the exec wrapper, cpus with CPU affinity; docs/apptainer.md explains each gap and what holds instead.
// What Docker does alike is shared, not copied: output caps and the timeout rule (output.ts), file
// access (core.ts over policy/host-paths.ts), owners and prune (core.ts), live registry and signals
// (live.ts).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, constants as fsc, readFileSync } from "node:fs";
import { access, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from "node:fs/promises";
import { availableParallelism, constants as osConstants, tmpdir } from "node:os";
import { delimiter, join, posix } from "node:path";
import { execa, execaSync } from "execa";
import {
  CAPTURE_SH,
  noteCaptureOff,
  PROXY_MOUNT,
  type RunProxy,
  type RunProxyOptions,
  startRunProxy,
} from "../network/run-proxy.ts";
import type { MountSpec, SandboxSpec } from "../policy/spec.ts";
import { sha256 } from "../sha256.ts";
import * as core from "./core.ts";
import { startGuarded } from "./guard.ts";
import { trackLive } from "./live.ts";
import * as output from "./output.ts";
import * as contract from "./types.ts";

export interface ApptainerBackendOptions {
  /** The run proxy's own resolver configuration and record sink (`network: [hosts]`). */
  proxy?: RunProxyOptions;
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
/** The in-container `timeout` is a backup: it fires this long after the host-side kill. */
const BACKUP_TIMEOUT_SLACK_SEC = 2;
/** The last-resort watchdog (kill the apptainer process group) fires this long after that. */
const HOST_WATCHDOG_SLACK_MS = 5_000;
/** After apptainer exits with its pipes still open (a background process holds them), the output
 * is complete once no data came for this long (bounded by PIPE_DRAIN_MAX_MS). */
const PIPE_IDLE_MS = 250;
const PIPE_DRAIN_MAX_MS = 5_000;
const INSTALL_FIX =
  "install Apptainer (https://apptainer.org/docs/admin/main/installation.html), or use the harness: bash scripts/apptainer-harness.sh shell";

/**
 * Variables Apptainer puts into every exec's environment although `--cleanenv` is given: they name
 * host paths (the SIF file) and the instance. The wrapper unsets them.
 */
const APPTAINER_ENV = [
  "APPTAINER_APPNAME",
  "APPTAINER_BIND",
  "APPTAINER_COMMAND",
  "APPTAINER_CONTAINER",
  "APPTAINER_ENVIRONMENT",
  "APPTAINER_INSTANCE",
  "APPTAINER_NAME",
  "SINGULARITY_APPNAME",
  "SINGULARITY_BIND",
  "SINGULARITY_CONTAINER",
  "SINGULARITY_ENVIRONMENT",
  "SINGULARITY_INSTANCE",
  "SINGULARITY_NAME",
  "PS1",
  "PROMPT_COMMAND",
];

/**
 * The one process scifi adds to an exec, run by `sh -c` inside the container: sets the rlimits,
 * replaces Apptainer's environment with the sandbox's (`export` of argv words, so no value needs
 * quoting), then execs the command (already wrapped in `timeout -k`, output.ts). $1 pids, $2 memory
 * KiB, then `K=V` words up to `--`, then the command. Only shell builtins run before the exec.
 */
const EXEC_WRAPPER = [
  // bash and busybox spell the process limit -u, dash -p; prlimit (util-linux) is the fallback.
  'ulimit -u "$1" 2>/dev/null || ulimit -p "$1" 2>/dev/null || prlimit --pid $$ --nproc="$1" 2>/dev/null ||',
  '  { echo "scifi: cannot set the process limit" >&2; exit 125; }',
  'if [ "$2" != 0 ]; then ulimit -v "$2" || { echo "scifi: cannot set the memory limit" >&2; exit 125; }; fi',
  `shift 2; unset ${APPTAINER_ENV.join(" ")}`,
  'while [ "$1" != -- ]; do export "$1"; shift; done; shift',
  'exec "$@"',
].join("\n");

/** Default environment of every exec (as on Docker): PATH, and HOME in the sandbox's own /tmp. */
const BASE_ENV = { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", HOME: "/tmp" };

export function createApptainerBackend(options: ApptainerBackendOptions = {}): contract.SandboxBackend {
  const ctx: BackendContext = {
    bin: options.apptainer ?? "apptainer",
    sifDir: options.sifDir ?? process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif",
    stateDir: options.stateDir ?? tmpdir(),
    cgroupLimits: options.cgroupLimits ?? false,
    ...(options.proxy ? { proxy: options.proxy } : {}),
  };
  return {
    name: BACKEND,
    status: () => apptainerStatus(ctx),
    // Apptainer runs the container as the calling user: the guard refuses a root-run scifi.
    start: (spec) =>
      startGuarded(spec, (s) => startSandbox(ctx, s), { backend: BACKEND, runsAsCaller: true }),
    prune: (scope) => pruneInstances(ctx, scope),
  };
}

interface BackendContext {
  bin: string;
  sifDir: string;
  stateDir: string;
  cgroupLimits: boolean;
  proxy?: RunProxyOptions;
}

// ---------------------------------------------------------------------------------------------
// Running apptainer itself

/**
 * The environment apptainer is started with: only what it needs to find itself and its state, never
 * the runner's (API keys live there), nor the user's name or temp folder. Apptainer hands what it was
 * started with to the instance's init (its ENGINE_CONFIG), so the less here, the less there.
 * `--cleanenv` additionally keeps the container's environment clean.
 */
function apptainerEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  const keep = ["PATH", "HOME", "XDG_RUNTIME_DIR", "LANG"];
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
      cwd: NEUTRAL_CWD,
      reject: false,
      stdin: "ignore",
      timeout: timeoutMs,
    });
    if (r.failed && r.exitCode === undefined) throw r;
    return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
  } catch (err) {
    if (isMissingBinary(err))
      throw new contract.SandboxUnavailable(BACKEND, `'${ctx.bin}' was not found`, INSTALL_FIX);
    throw new contract.SandboxError(`apptainer ${args[0]} failed to run: ${(err as Error).message}`);
  }
}

/**
 * Where apptainer runs: never the runner's folder, which Apptainer would record in the instance's
 * configuration (and which says whose and which home this is).
 */
const NEUTRAL_CWD = "/";

function isMissingBinary(err: unknown): boolean {
  return (err as { code?: string }).code === "ENOENT";
}

async function apptainerStatus(ctx: BackendContext): Promise<contract.BackendStatus> {
  try {
    const r = await runApptainer(ctx, ["--version"], 20_000);
    if (r.exitCode !== 0)
      return { available: false, detail: `apptainer --version failed: ${r.stderr.trim()}`, fix: INSTALL_FIX };
    const sealing = (await findOnPath("perl"))
      ? ""
      : "; no perl on this host: the init's threads and a raw clone3 stay open (docs/apptainer.md)";
    return { available: true, detail: `${r.stdout.trim()} (SIF cache ${ctx.sifDir}${sealing})` };
  } catch (err) {
    if (err instanceof contract.SandboxUnavailable)
      return { available: false, detail: err.message, fix: err.fix };
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
    throw new contract.SandboxUnavailable(
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
    throw new contract.PathRefused(
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

/**
 * The rules of the run's proxy for this instance: the SAM's host list, or for `network: true` any
 * public host (unprivileged Apptainer has no per-run network; the host's own network only where the
 * site says `apptainerHostNetwork: true`). Undefined: no proxy.
 */
export function proxiedRules(spec: SandboxSpec): SandboxSpec["networkRules"] {
  if (spec.networkRules) return spec.networkRules;
  if (!spec.network || spec.openNetwork?.apptainerHostNetwork) return undefined;
  return spec.openNetwork?.rules ?? { allow: ["*"], deny: [], allowedPrivateRanges: [] };
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
  if (!spec.network || proxiedRules(spec)) args.push("--net", "--network", "none");
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
    throw new contract.SandboxError(`could not make the scratch image (${mkfs}): ${String(r.stderr).trim()}`);
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
  const start = Number.parseInt(sha256(key).slice(0, 8), 16) % allowed.length;
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
  throw new contract.SandboxUnavailable(
    BACKEND,
    "a size-limited scratch needs mkfs.ext3 (e2fsprogs) on this machine",
    "apt-get install -y e2fsprogs",
  );
}

async function startSandbox(ctx: BackendContext, spec: SandboxSpec): Promise<contract.Sandbox> {
  const sif = await resolveSif(ctx, spec.image);
  const name = instanceName(spec.runId);
  const args = ["instance", "start", ...instanceStartArgs(spec, ctx.cgroupLimits)];
  const stateDir = await mkdtemp(join(ctx.stateDir, `${name}-`));
  // `network: [hosts]`: the instance has only loopback (--network none); the run's proxy is reached
  // through its socket, by a forwarder on 127.0.0.1:3128 inside (the runner's node, bound read-only).
  const rules = proxiedRules(spec);
  const proxy = rules ? await startRunProxy({ ...spec, networkRules: rules }, ctx.proxy) : undefined;
  try {
    // The owner first: a runner killed right after the start leaves a record prune can judge.
    const record: OwnerRecord = { instance: name, runId: spec.runId, ...core.currentOwner(spec) };
    await writeFile(join(stateDir, OWNER_FILE), `${JSON.stringify(record)}\n`, { mode: 0o600 });
    args.push(...(await hardeningArgs(stateDir)));
    if (spec.scratch) {
      const image = await makeScratchImage(stateDir, spec.scratch.sizeBytes);
      args.push("--mount", `type=bind,src=${image},dst=${spec.scratch.target},image-src=/`);
    }
    if (proxy)
      args.push(
        "--bind",
        `${proxy.dir}:${PROXY_MOUNT}:ro`,
        "--bind",
        `${process.execPath}:${NODE_IN_SANDBOX}:ro`,
      );
    args.push(sif, name);
    const r = await runApptainer(ctx, ["-q", ...args]);
    if (r.exitCode !== 0) {
      throw new contract.SandboxError(
        `apptainer instance start ${name} failed (exit ${r.exitCode}): ${r.stderr.trim()}`,
      );
    }
  } catch (err) {
    await rm(stateDir, { recursive: true, force: true });
    await proxy?.close();
    throw err;
  }
  const pin = await cpuPinning(spec.cpus, name);
  const nsInit = await findNsInit(ctx, name);
  if (nsInit) await sealInstance(nsInit);
  const sandbox = new ApptainerSandbox(ctx, spec, name, stateDir, nsInit, pin);
  if (proxy) {
    try {
      const capture = nsInit ? await setUpCapture(nsInit.pid) : "the instance's init was not found";
      if (capture !== undefined) noteCaptureOff(proxy, capture);
      await sandbox.startForwarder(proxy);
    } catch (err) {
      await sandbox.stop();
      throw err;
    }
  }
  return sandbox;
}

/**
 * Closes what seccomp and the /proc/1 mask leave open, from the host, as the instance's owner (the
 * instance's user namespace is ours, so joining it gives every capability in it), with a short perl
 * program (perl: on the host, not in the image; it calls setns and mount itself, where util-linux's
 * nsenter and mount drop or refuse those capabilities for a non-root uid):
 * - `user.max_user_namespaces` of the instance's user namespace set to 0: no process of the sandbox
 *   can create a user namespace by any call (clone3 included, which seccomp cannot judge);
 * - in the instance's mount namespace, the empty /proc/1 bound over /proc/TID of every thread of
 *   the init: their environ is the init's (Apptainer's ENGINE_CONFIG).
 * Best effort on hosts without perl (docs/apptainer.md says what stays open then); threads the init
 * starts later are masked before the next exec (ApptainerSandbox.#run).
 */
async function sealInstance(init: NsInit): Promise<void> {
  const threads = (await initThreads(init.pid)).filter((t) => !init.sealed.has(t.host));
  const tids = threads.map((t) => t.inner);
  const perl = await findOnPath("perl");
  if (!perl) return;
  const [setns, mount] = process.arch === "arm64" ? [268, 40] : [308, 165];
  const r = await execa(perl, ["-e", SEAL_PERL, String(setns), String(mount), String(init.pid), ...tids], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    extendEnv: false,
    cwd: NEUTRAL_CWD,
    reject: false,
    stdin: "ignore",
    timeout: 20_000,
  });
  if (r.exitCode !== 0) return;
  init.sealedOnce = true;
  for (const t of threads) init.sealed.add(t.host);
}

/** The init's threads other than itself: host id and id in the instance's PID namespace. */
async function initThreads(pid: number): Promise<{ host: string; inner: string }[]> {
  const threads: { host: string; inner: string }[] = [];
  for (const task of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const status = await readFile(`/proc/${pid}/task/${task}/status`, "latin1").catch(() => "");
    const inner = /^NSpid:\s+([\d\s]+)$/m.exec(status)?.[1]?.trim().split(/\s+/).at(-1);
    if (inner && inner !== "1") threads.push({ host: task, inner });
  }
  return threads;
}

/**
 * The network capture (runner/network/run-proxy.ts CAPTURE_SH) in an instance with a host list: the
 * instance's namespace is configured from the host, as the seal is. Entering the instance's user
 * namespace gives this process CAP_NET_ADMIN there; it is made ambient so that the image's `ip` and
 * `iptables` (run as the user) keep it; then the network and mount namespaces are joined. Returns
 * why it could not be set up, or undefined when it is on.
 */
async function setUpCapture(pid: number): Promise<string | undefined> {
  const perl = await findOnPath("perl");
  if (!perl) return "the host has no perl to enter the instance's namespaces";
  const calls = process.arch === "arm64" ? [268, 90, 91, 167] : [308, 125, 126, 157];
  const r = await execa(perl, ["-e", CAPTURE_PERL, ...calls.map(String), String(pid), CAPTURE_SH], {
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
    extendEnv: false,
    cwd: NEUTRAL_CWD,
    reject: false,
    stdin: "ignore",
    timeout: 20_000,
  });
  if (r.exitCode === 0 && r.stdout.includes("scifi-net capture on")) return undefined;
  return `${r.stderr || r.stdout}`.trim().slice(-300) || `exit ${r.exitCode}`;
}

/** argv: setns, capget, capset and prctl syscall numbers, the init's host pid, the script. */
const CAPTURE_PERL = `
use strict;
my ($SETNS, $CAPGET, $CAPSET, $PRCTL, $pid, $script) = @ARGV;
open(my $user, "<", "/proc/$pid/ns/user") or die "user namespace: $!\n";
open(my $net, "<", "/proc/$pid/ns/net") or die "network namespace: $!\n";
open(my $mnt, "<", "/proc/$pid/ns/mnt") or die "mount namespace: $!\n";
syscall($SETNS, fileno($user), 0x10000000) == 0 or die "join the user namespace: $!\n";
my $hdr = pack("LL", 0x20080522, 0);
my $data = "\\0" x 24;
syscall($CAPGET, $hdr, $data) == 0 or die "capget: $!\n";
my @caps = unpack("L6", $data);
$caps[2] |= 1 << 12;
$data = pack("L6", @caps);
syscall($CAPSET, $hdr, $data) == 0 or die "capset: $!\n";
syscall($PRCTL, 47, 2, 12, 0, 0) == 0 or die "ambient CAP_NET_ADMIN: $!\n";
syscall($SETNS, fileno($net), 0x40000000) == 0 or die "join the network namespace: $!\n";
syscall($SETNS, fileno($mnt), 0x00020000) == 0 or die "join the mount namespace: $!\n";
exec("/bin/sh", "-c", $script) or die "exec /bin/sh: $!\n";
`;

/** argv: setns and mount syscall numbers, the init's host pid, the thread ids to mask. */
const SEAL_PERL = `
use strict;
my ($SETNS, $MOUNT, $pid, @tids) = @ARGV;
open(my $user, "<", "/proc/$pid/ns/user") or die "user namespace: $!\n";
open(my $mnt, "<", "/proc/$pid/ns/mnt") or die "mount namespace: $!\n";
syscall($SETNS, fileno($user), 0x10000000) == 0 or die "join the user namespace: $!\n";
open(my $max, ">", "/proc/sys/user/max_user_namespaces") or die "max_user_namespaces: $!\n";
print $max "0\n";
close($max) or die "max_user_namespaces: $!\n";
syscall($SETNS, fileno($mnt), 0x00020000) == 0 or die "join the mount namespace: $!\n";
for my $tid (@tids) {
  my ($src, $dst) = ("/proc/1", "/proc/$tid");
  syscall($MOUNT, $src, $dst, 0, 4096, 0) == 0 or die "mask /proc/$tid: $!\n";
}
`;

/**
 * What every instance gets on top of the spec:
 * - a seccomp filter (Apptainer applies it unprivileged, to the instance and every exec into it)
 *   that refuses new user namespaces (`unshare -r`, clone with CLONE_NEWUSER), namespace joins and
 *   every mount call: the sandbox cannot build itself a namespace where it holds capabilities;
 * - an empty, read-only folder over `/proc/1`: the instance's init carries Apptainer's ENGINE_CONFIG
 *   (bind sources, image, the user's home) in its environment, readable by the same uid (its
 *   threads' /proc entries are masked after the start: sealInstance).
 */
async function hardeningArgs(stateDir: string): Promise<string[]> {
  const profile = join(stateDir, "seccomp.json");
  await writeFile(profile, `${JSON.stringify(seccompProfile(process.arch))}\n`, { mode: 0o600 });
  const empty = join(stateDir, "empty");
  await mkdir(empty, { mode: 0o500 });
  return ["--security", `seccomp:${profile}`, "--bind", `${empty}:/proc/1:ro`];
}

/** CLONE_NEWUSER, as clone(2)'s first argument carries it on x86_64 and arm64. */
const CLONE_NEWUSER = 0x10000000;

/**
 * The sandbox's seccomp profile (OCI format, as Apptainer reads it): everything is allowed but the
 * calls that build or join namespaces or mount; those fail with EPERM (Apptainer ignores `errnoRet`).
 * clone3 stays allowed: its flags sit in memory, which seccomp cannot read, and refusing it with
 * EPERM (not ENOSYS, after which libc would fall back to clone) breaks every new thread. A raw
 * clone3(CLONE_NEWUSER) is refused by the kernel instead: sealInstance sets the instance's
 * max_user_namespaces to 0 (docs/apptainer.md).
 */
export function seccompProfile(arch: string): object {
  const architectures =
    arch === "arm64"
      ? ["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]
      : ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"];
  const refuse = (names: string[]) => ({ names, action: "SCMP_ACT_ERRNO" });
  return {
    defaultAction: "SCMP_ACT_ALLOW",
    architectures,
    syscalls: [
      refuse(["unshare", "setns"]),
      refuse(["mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount"]),
      refuse(["fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"]),
      {
        ...refuse(["clone"]),
        args: [{ index: 0, value: CLONE_NEWUSER, valueTwo: CLONE_NEWUSER, op: "SCMP_CMP_MASKED_EQ" }],
      },
    ],
  };
}

/** Who started an instance: `<stateDir>/scifi-<run>-XXXXXX/owner.json` (prune reads it). */
interface OwnerRecord extends contract.SandboxOwner {
  instance: string;
  runId: string;
}

const OWNER_FILE = "owner.json";

// ---------------------------------------------------------------------------------------------
// The sandbox

class ApptainerSandbox implements contract.Sandbox {
  readonly backend = BACKEND;
  readonly spec: SandboxSpec;
  readonly #ctx: BackendContext;
  readonly #name: string;
  readonly #stateDir: string;
  /** The instance's PID-namespace init: orphans of timed-out execs become its children. */
  readonly #nsInit: NsInit | undefined;
  /** `taskset -c LIST` before apptainer for every exec, when `cpus` is fewer than this machine has. */
  readonly #pin: string[];
  readonly #untrack: () => void;
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
    this.#untrack = trackLive({
      runId: spec.runId,
      stop: () => this.stop(),
      stopSync: () => this.stopSync(),
    });
    started.set(spec.runId, this);
  }

  async exec(command: string[] | string, options: contract.ExecOptions = {}): Promise<contract.ExecResult> {
    const r = await this.#run(output.toArgv(command), options);
    return core.execResult(r, r.timedOut, r.durationMs);
  }

  /**
   * The process an exec runs on the host: `[taskset -c LIST] apptainer exec ... instance://NAME sh -c
   * WRAPPER ... -- timeout -k ... argv` (the benchmark times each layer of it: execCommandLine).
   */
  commandLine(argv: string[], options: contract.ExecOptions = {}): [string, ...string[]] {
    const timeoutMs = options.timeoutMs ?? output.DEFAULT_TIMEOUT_MS;
    const cwd = posix.resolve(this.spec.workdir, options.cwd ?? ".");
    const env = {
      ...BASE_ENV,
      ...gpuEnv(this.spec.gpus),
      ...this.spec.env,
      ...(this.#proxy?.env ?? {}),
      ...options.env,
    };
    // RLIMIT_NPROC is counted per user namespace, i.e. per instance: its own tasks plus pidsLimit.
    const nproc = (this.#nsInit?.baseTasks ?? 0) + this.spec.pidsLimit;
    const inner = [
      "/bin/sh",
      "-c",
      EXEC_WRAPPER,
      "scifi-exec",
      String(nproc),
      String(Math.floor(this.spec.memoryBytes / 1024)),
      ...envAssignments(env),
      "--",
      // The in-container deadline is the backup: the host kills the exec first (runCapped).
      ...output.withTimeout(argv, timeoutMs + BACKUP_TIMEOUT_SLACK_SEC * 1000),
    ];
    const args = ["-q", "exec", "--cleanenv", "--pwd", cwd, `instance://${this.#name}`, ...inner];
    return [...this.#pin, this.#ctx.bin, ...args] as [string, ...string[]];
  }

  /** One exec inside the instance, under the rlimit and timeout wrapper. */
  async #run(argv: string[], options: contract.ExecOptions): Promise<RawExec> {
    if (this.#stopping) throw new contract.SandboxError(`sandbox ${this.#name} is stopped`);
    const timeoutMs = options.timeoutMs ?? output.DEFAULT_TIMEOUT_MS;
    await this.#resealIfNeeded();
    const [bin, ...binArgs] = this.commandLine(argv, options);
    const r = await runCapped(bin, binArgs, {
      stdin: options.stdin,
      maxOutputBytes: options.maxOutputBytes ?? output.DEFAULT_MAX_OUTPUT_BYTES,
      timeoutMs,
      onTimeout: (pid) => killExecTree(pid, this.#nsInit),
      signal: options.signal,
      watchdogMs:
        timeoutMs + (BACKUP_TIMEOUT_SLACK_SEC + output.KILL_GRACE_SEC) * 1000 + HOST_WATCHDOG_SLACK_MS,
    });
    const timedOut =
      r.timeoutFired || r.watchdogFired || output.endedByTimeout(r.exitCode, r.durationMs, timeoutMs);
    if (!timedOut && r.exitCode === 255 && /^FATAL:/m.test(r.stderr.bytes().toString()))
      await this.#assertInstanceAlive();
    return { ...r, timedOut };
  }

  /** A thread the init started since the last exec gets its /proc entry masked first. */
  async #resealIfNeeded(): Promise<void> {
    const init = this.#nsInit;
    if (!init?.sealedOnce) return;
    const now = await readdir(`/proc/${init.pid}/task`).catch(() => [] as string[]);
    if (now.some((task) => task !== String(init.pid) && !init.sealed.has(task))) await sealInstance(init);
  }

  async alive(): Promise<boolean> {
    const names = await listInstances(this.#ctx).catch(() => undefined);
    return names === undefined || names.includes(this.#name);
  }

  /** Exit 255 with FATAL may be the command's own; it is the engine's when the instance is gone. */
  async #assertInstanceAlive(): Promise<void> {
    const names = await listInstances(this.#ctx).catch(() => undefined);
    if (names && !names.includes(this.#name)) {
      throw new contract.SandboxError(`apptainer instance ${this.#name} is no longer running`);
    }
  }

  readFile(path: string): Promise<Buffer> {
    return core.readSandboxFile(this.spec, path, this.#inside);
  }

  writeFile(path: string, data: string | Buffer): Promise<void> {
    return core.writeSandboxFile(this.spec, path, data, this.#inside);
  }

  /** Runner commands inside (file access): cwd `/`, no extra environment, the default deadline. */
  readonly #inside: core.InsideRun = (argv, opts) =>
    this.#run(argv, { cwd: "/", stdin: opts.stdin, maxOutputBytes: opts.maxBytes });

  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  #proxy: RunProxy | undefined;
  #forwarder: ChildProcess | undefined;

  /** Starts the forwarder inside the instance and waits until it listens. */
  async startForwarder(proxy: RunProxy): Promise<void> {
    this.#proxy = proxy;
    const child = spawn(
      this.#ctx.bin,
      [
        "-q",
        "exec",
        "--cleanenv",
        `instance://${this.#name}`,
        "/bin/sh",
        "-c",
        // Python serves the capture's catch ports too; the runner's node only the proxy port.
        `command -v python3 >/dev/null 2>&1 && exec python3 -u ${PROXY_MOUNT}/forwarder.py; exec ${NODE_IN_SANDBOX} ${PROXY_MOUNT}/forwarder.cjs`,
      ],
      { env: apptainerEnv(), stdio: ["ignore", "pipe", "pipe"], cwd: NEUTRAL_CWD },
    );
    this.#forwarder = child;
    let out = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new contract.SandboxError(`apptainer: the network forwarder did not start: ${out.slice(-400)}`),
          ),
        20_000,
      );
      const onData = (d: Buffer) => {
        out += d.toString();
        if (out.includes("scifi-net ready")) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      child.on("exit", (code) => {
        clearTimeout(timer);
        reject(
          new contract.SandboxError(`apptainer: the network forwarder exited (${code}): ${out.slice(-400)}`),
        );
      });
    });
  }

  async #stop(): Promise<void> {
    try {
      this.#forwarder?.kill("SIGKILL");
      await stopInstance(this.#ctx, this.#name);
      await this.#proxy?.close();
    } finally {
      this.#untrack();
      started.delete(this.spec.runId);
      await rm(this.#stateDir, { recursive: true, force: true });
    }
  }

  /** Synchronous last resort for process exit: the instance must not outlive the runner. */
  stopSync(): void {
    stopInstanceSync(this.#ctx, this.#name);
  }
}

/** Where the runner's node binary appears in an instance with a host list (the forwarder runs on it). */
const NODE_IN_SANDBOX = "/run/scifi-node";

/** The sandboxes this process started and has not stopped, by run id (for execCommandLine). */
const started = new Map<string, ApptainerSandbox>();

/**
 * The host command line an exec of `argv` in the running sandbox of `runId` would run, for the
 * benchmark (test/sandbox/apptainer/bench-exec.ts); undefined when no such sandbox runs here.
 */
export function execCommandLine(runId: string, argv: string[]): string[] | undefined {
  return started.get(runId)?.commandLine(argv);
}

interface RawExec extends core.InsideResult {
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
  /** The init's threads (host ids) whose /proc entry is masked inside (sealInstance). */
  sealed: Set<string>;
  /** Whether sealInstance has worked once (then new threads are masked before each exec). */
  sealedOnce?: boolean;
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
      return {
        pid,
        own,
        baseTasks: userNs ? await countNamespaceTasks(userNs) : 0,
        sealed: new Set<string>(),
      };
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
      throw new contract.SandboxError(
        `invalid environment variable name '${key}': use letters, digits and '_'`,
      );
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
  /** Aborting kills the exec like its timeout does (the quota guard). */
  signal?: AbortSignal | undefined;
}

interface CappedResult extends core.InsideResult {
  timeoutFired: boolean;
  watchdogFired: boolean;
  durationMs: number;
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
  const out = new output.CappedBuffer(options.maxOutputBytes);
  const err = new output.CappedBuffer(options.maxOutputBytes);
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
  const abort = (): void => {
    if (child.pid !== undefined) killing = options.onTimeout(child.pid).catch(() => {});
  };
  if (options.signal?.aborted) abort();
  else options.signal?.addEventListener("abort", abort, { once: true });
  const watchdog = setTimeout(() => {
    watchdogFired = true;
    killGroup(child.pid);
  }, options.watchdogMs);
  try {
    const exitCode = await exited(child);
    await killing; // the exec's processes are gone before the result says so
    return {
      exitCode: exitCode ?? 137,
      stdout: out,
      stderr: err,
      timeoutFired,
      watchdogFired,
      durationMs: Math.round(performance.now() - started),
    };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", abort);
    clearTimeout(watchdog);
  }
}

/**
 * Exit code (signals as 128+n) once the process has exited and its output is read: at once when the
 * pipes close with it (the usual case), else (a leftover background process keeps them open) once
 * no data came for PIPE_IDLE_MS, at most PIPE_DRAIN_MAX_MS after the exit.
 */
function exited(child: ChildProcess): Promise<number | null> {
  let lastData = performance.now();
  const touch = (): void => {
    lastData = performance.now();
  };
  child.stdout?.on("data", touch);
  child.stderr?.on("data", touch);
  const statusOf = (code: number | null, signal: NodeJS.Signals | null) =>
    code ?? (signal ? 128 + (osConstants.signals[signal] ?? 0) : null);
  return new Promise((resolve, reject) => {
    let poll: NodeJS.Timeout | undefined;
    const done = (status: number | null): void => {
      if (poll) clearInterval(poll);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve(status);
    };
    child.once("error", (e: NodeJS.ErrnoException) => {
      reject(
        e.code === "ENOENT"
          ? new contract.SandboxUnavailable(BACKEND, `'${child.spawnfile}' was not found`, INSTALL_FIX)
          : e,
      );
    });
    child.once("close", (code, signal) => done(statusOf(code, signal)));
    child.once("exit", (code, signal) => {
      const status = statusOf(code, signal);
      const exitedAt = performance.now();
      poll = setInterval(() => {
        const now = performance.now();
        const quiet = now - lastData >= PIPE_IDLE_MS && now - exitedAt >= PIPE_IDLE_MS;
        if (quiet || now - exitedAt >= PIPE_DRAIN_MAX_MS) done(status);
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
// Listing, stopping, pruning

async function listInstances(ctx: BackendContext): Promise<string[]> {
  const r = await runApptainer(ctx, ["instance", "list", "--json"], 30_000);
  if (r.exitCode !== 0) throw new contract.SandboxError(`apptainer instance list failed: ${r.stderr.trim()}`);
  const parsed = JSON.parse(r.stdout || "{}") as { instances?: { instance: string }[] };
  return (parsed.instances ?? []).map((i) => i.instance);
}

/** Idempotent: an instance that is already gone is fine. */
async function stopInstance(ctx: BackendContext, name: string): Promise<void> {
  const r = await runApptainer(ctx, ["-q", "instance", "stop", "--force", name], 60_000);
  if (r.exitCode === 0 || /no instance found|not found/i.test(r.stderr)) return;
  const still = await listInstances(ctx).catch(() => [name]);
  if (still.includes(name))
    throw new contract.SandboxError(`apptainer instance stop ${name} failed: ${r.stderr.trim()}`);
}

function stopInstanceSync(ctx: BackendContext, name: string): void {
  try {
    execaSync(ctx.bin, ["-q", "instance", "stop", "--force", name], {
      env: apptainerEnv(),
      extendEnv: false,
      cwd: NEUTRAL_CWD,
      timeout: 10_000,
    });
  } catch {
    // best effort at exit
  }
}

/**
 * Stops this home's instances whose owner is gone (core.ts mayPrune) and removes their state
 * folders. An instance is judged by the owner records in the state folder; one without a record
 * (another state folder, an older scifi) is left alone, and so is one that any record keeps.
 */
async function pruneInstances(ctx: BackendContext, scope: contract.PruneScope): Promise<string[]> {
  const running = new Set(await listInstances(ctx));
  const records = await ownerRecords(ctx.stateDir);
  const kept = new Set(records.filter((r) => !core.mayPrune(r.runId, r, scope)).map((r) => r.instance));
  const removed: string[] = [];
  for (const record of records) {
    if (kept.has(record.instance)) continue;
    if (running.delete(record.instance)) {
      await stopInstance(ctx, record.instance);
      removed.push(`${record.instance} (run ${record.runId})`);
    }
    await rm(record.dir, { recursive: true, force: true });
  }
  return removed;
}

/** The owner records of `<stateDir>/scifi-*-XXXXXX/owner.json`, in folders this user owns. */
async function ownerRecords(stateDir: string): Promise<(OwnerRecord & { dir: string })[]> {
  const uid = process.getuid?.();
  const found: (OwnerRecord & { dir: string })[] = [];
  for (const entry of await readdir(stateDir).catch(() => [] as string[])) {
    if (!/^scifi-.+-[A-Za-z0-9]{6}$/.test(entry)) continue;
    const dir = join(stateDir, entry);
    const info = await stat(dir).catch(() => undefined);
    if (!info?.isDirectory() || (uid !== undefined && info.uid !== uid)) continue;
    const text = await readFile(join(dir, OWNER_FILE), "utf8").catch(() => "");
    try {
      const record = JSON.parse(text) as OwnerRecord;
      if (typeof record.instance === "string" && typeof record.runId === "string")
        found.push({ ...record, dir });
    } catch {
      // no record (an older scifi's folder) or a torn one: not provably ours to remove
    }
  }
  return found;
}
