// Docker backend (dockerode): one long-lived container per run, every tool call an exec into it.
// The container is default-deny: no capabilities, no-new-privileges, no network unless granted,
// pids/memory/cpu limits, read-only root filesystem, the invoking user's uid:gid, and only the binds
// the policy resolved. Docker's exec API cannot kill, so deadlines are enforced in layers: `timeout -k`
// inside, then a host-side watchdog that kills every process of the exec, then a container restart.
import { execFile, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { type Duplex, PassThrough } from "node:stream";
import Docker from "dockerode";
import { egressAddScript, egressFilterScript, hostAddresses, watchHostAddresses } from "../network/egress.ts";
import type { ConnectionRecord } from "../network/proxy.ts";
import {
  noteCaptureOff,
  PROXY_MOUNT,
  type RunProxy,
  type RunProxyOptions,
  startRunProxy,
} from "../network/run-proxy.ts";
import type { SandboxSpec } from "../policy/spec.ts";
import {
  currentOwner,
  execResult,
  type InsideRun,
  mayPrune,
  readSandboxFile,
  writeSandboxFile,
} from "./core.ts";
import { startGuarded } from "./guard.ts";
import { trackLive } from "./live.ts";
import {
  CappedBuffer,
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_TIMEOUT_MS,
  endedByTimeout,
  KILL_GRACE_SEC,
  pollUntil,
  sleep,
  toArgv,
  withTimeout,
} from "./output.ts";
import type * as contract from "./types.ts";
import { type Sandbox, type SandboxBackend, SandboxError, SandboxUnavailable } from "./types.ts";

export interface DockerBackendOptions {
  /** A ready dockerode client (tests, remote engines); default: the local socket / DOCKER_HOST. */
  docker?: Docker;
  /** Size of the tmpfs at /tmp (the root filesystem is read-only). Default 1 GiB. */
  tmpSizeBytes?: number;
  /** The run proxy's own resolver configuration and record sink (`network: [hosts]`). */
  proxy?: RunProxyOptions;
}

const FIX_ENGINE = "bash scripts/start-docker.sh";
const FIX_IMAGE = "bash scripts/build-image.sh";
const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Every process of one exec carries this variable, so the watchdog can find and kill them all. */
const EXEC_MARKER = "SCIFI_EXEC_ID";

export function createDockerBackend(options: DockerBackendOptions = {}): SandboxBackend {
  const docker = options.docker ?? new Docker();
  return {
    name: "docker",
    status: () => dockerStatus(docker),
    start: (spec) => startGuarded(spec, (s) => startDockerSandbox(docker, s, options), { backend: "docker" }),
    prune: (scope) => pruneContainers(docker, scope),
  };
}

/** Container name for a run: `scifi-<runId>` with anything Docker rejects replaced. */
export function containerName(runId: string): string {
  return `scifi-${runId.replace(/[^a-zA-Z0-9_.-]/g, "-")}`;
}

async function dockerStatus(docker: Docker): Promise<contract.BackendStatus> {
  try {
    const v = await docker.version();
    return { available: true, detail: `Docker Engine ${v.Version} (API ${v.ApiVersion})` };
  } catch (error) {
    return { available: false, detail: `no Docker engine answers (${messageOf(error)})`, fix: FIX_ENGINE };
  }
}

async function startDockerSandbox(
  docker: Docker,
  spec: SandboxSpec,
  options: DockerBackendOptions,
): Promise<Sandbox> {
  await requireImage(docker, spec.image);
  const net = await startDockerNet(docker, spec, options);
  let container: Docker.Container;
  try {
    container = await docker.createContainer(containerOptions(spec, options, net));
  } catch (error) {
    await net?.close();
    throw new SandboxError(`docker: cannot create the container for run ${spec.runId}: ${messageOf(error)}`);
  }
  const sandbox = new DockerSandbox(docker, container, spec, net);
  try {
    await container.start();
  } catch (error) {
    await sandbox.stop();
    throw new SandboxError(`docker: cannot start the container for run ${spec.runId}: ${messageOf(error)}`);
  }
  return sandbox;
}

async function requireImage(docker: Docker, image: string): Promise<void> {
  try {
    await docker.getImage(image).inspect();
  } catch (error) {
    if (statusCodeOf(error) === 404) {
      throw new SandboxUnavailable("docker", `the image '${image}' is not present`, FIX_IMAGE);
    }
    throw new SandboxUnavailable("docker", `no Docker engine answers (${messageOf(error)})`, FIX_ENGINE);
  }
}

/**
 * The sandbox's network when it has one. `network: [hosts]`: a forwarder container owns a network
 * namespace with nothing but loopback (NetworkMode none) and listens there on 127.0.0.1:3128 for the
 * run's proxy, reached through its unix socket; the sandbox joins that namespace. It outlives a
 * restart of the sandbox, and the agent (another pid namespace) cannot stop it. `network: true`: a
 * bridge network of the run's own, never the shared default bridge.
 */
export interface DockerNet {
  /** The sandbox's NetworkMode. */
  mode: string;
  mounts: { Type: "bind"; Source: string; Target: string; ReadOnly: boolean }[];
  env: Record<string, string>;
  proxy?: RunProxy;
  close(): Promise<void>;
  closeSync(): void;
}

function sandboxLabels(spec: SandboxSpec): Record<string, string> {
  return {
    ...spec.labels,
    scifi: "1",
    "scifi.run": spec.runId,
    "scifi.backend": "docker",
    ...ownerLabels(currentOwner(spec)),
  };
}

/**
 * A container that owns a sandbox's network namespace (`scifi-<run>-net`): started as root with
 * only the capabilities to set the namespace up (NET_ADMIN there, and to drop to a uid), read-only,
 * small; it prints `ready` once set up and then runs unprivileged. Returns it with what it printed;
 * removed again (and the error says what it printed) when it exits or never gets ready.
 */
async function startNamespaceHolder(
  docker: Docker,
  spec: SandboxSpec,
  o: {
    role: string;
    entrypoint: string[];
    networkMode: string;
    capAdd: string[];
    memoryMiB: number;
    pids: number;
    ready: string;
    mounts?: DockerNet["mounts"];
  },
): Promise<{ container: Docker.Container; logs: string }> {
  let container: Docker.Container | undefined;
  try {
    container = await docker.createContainer({
      name: `${containerName(spec.runId)}-net`,
      Image: spec.image,
      Entrypoint: o.entrypoint,
      Cmd: [],
      User: "0:0",
      Labels: { ...sandboxLabels(spec), "scifi.role": o.role },
      HostConfig: {
        Init: true,
        CapDrop: ["ALL"],
        CapAdd: o.capAdd,
        SecurityOpt: ["no-new-privileges"],
        NetworkMode: o.networkMode,
        ReadonlyRootfs: true,
        Tmpfs: { "/tmp": "rw,nosuid,nodev,size=1m,mode=1777" },
        PidsLimit: o.pids,
        Memory: o.memoryMiB * 1024 ** 2,
        MemorySwap: o.memoryMiB * 1024 ** 2,
        ...(o.mounts ? { Mounts: o.mounts } : {}),
      },
    });
    await container.start();
    const started = container;
    const logs = await pollUntil(
      async () => {
        const text = String(await started.logs({ stdout: true, stderr: true, follow: false }));
        if (text.includes(o.ready)) return text;
        const info = await started.inspect();
        if (!info.State.Running) throw new Error(text.slice(-400) || `exit ${info.State.ExitCode}`);
        return undefined;
      },
      `the ${o.role} to get ready`,
      15_000,
      50,
    );
    return { container, logs };
  } catch (error) {
    await container?.remove({ force: true }).catch(() => undefined);
    throw error;
  }
}

async function startDockerNet(
  docker: Docker,
  spec: SandboxSpec,
  options: DockerBackendOptions,
): Promise<DockerNet | undefined> {
  if (spec.networkRules) {
    const rp = await startRunProxy(spec, options.proxy);
    const mount = { Type: "bind" as const, Source: rp.dir, Target: PROXY_MOUNT, ReadOnly: true };
    let id: string;
    try {
      // Root only to set up the capture (NET_ADMIN in this namespace alone), then the sandbox's uid.
      const { container, logs } = await startNamespaceHolder(docker, spec, {
        role: "network-forwarder",
        entrypoint: [
          "python3",
          "-u",
          `${PROXY_MOUNT}/forwarder.py`,
          "--setup",
          String(spec.user.uid),
          String(spec.user.gid),
        ],
        networkMode: "none",
        capAdd: ["NET_ADMIN", "SETUID", "SETGID"],
        memoryMiB: 256,
        pids: 256,
        ready: "scifi-net ready",
        mounts: [mount],
      });
      id = container.id;
      const off = /scifi-net capture off: (.*)/.exec(logs)?.[1];
      if (off) noteCaptureOff(rp, off);
    } catch (error) {
      await rp.close();
      throw new SandboxError(
        `docker: cannot start the network forwarder for run ${spec.runId} (the image needs python3 for it): ${messageOf(error)}`,
      );
    }
    return {
      mode: `container:${id}`,
      mounts: [mount],
      env: rp.env,
      proxy: rp,
      close: async () => {
        await docker
          .getContainer(id)
          .remove({ force: true })
          .catch(() => undefined);
        await rp.close();
      },
      closeSync: () => {
        spawnSync("docker", ["rm", "-f", id], { stdio: "ignore", timeout: 10_000 });
      },
    };
  }
  if (spec.network) {
    const name = containerName(spec.runId);
    try {
      await docker.createNetwork({
        Name: name,
        Driver: "bridge",
        CheckDuplicate: true,
        Labels: sandboxLabels(spec),
        Options: { "com.docker.network.bridge.enable_icc": "false" },
      });
    } catch (error) {
      throw new SandboxError(`docker: cannot create the network for run ${spec.runId}: ${messageOf(error)}`);
    }
    const removeNetwork = () =>
      docker
        .getNetwork(name)
        .remove()
        .catch(() => undefined);
    // The holder owns the sandbox's namespace on that network, with the egress filter in it.
    const rules = spec.openNetwork?.rules ?? { allow: ["*"], deny: [], allowedPrivateRanges: [] };
    const drop = `exec setpriv --reuid=${spec.user.uid} --regid=${spec.user.gid} --clear-groups --inh-caps=-all --bounding-set=-all sleep infinity`;
    let id: string;
    const known = hostAddresses();
    try {
      const { container } = await startNamespaceHolder(docker, spec, {
        role: "network-holder",
        entrypoint: ["sh", "-c", `${egressFilterScript(rules, known)}${drop}\n`],
        networkMode: name,
        capAdd: ["NET_ADMIN", "SETUID", "SETGID", "SETPCAP"],
        memoryMiB: 64,
        pids: 16,
        ready: "scifi-net filter on",
      });
      id = container.id;
    } catch (error) {
      await removeNetwork();
      // Fail closed: without the filter the sandbox would reach this host and its LAN.
      throw new SandboxError(
        `docker: cannot set up network: true for run ${spec.runId} (the image needs iptables and setpriv to keep this host and the LAN out; the scifi images have them): ${messageOf(error)}`,
      );
    }
    // An address this host gets later is refused too (the holder keeps NET_ADMIN for a root exec).
    const holder = id;
    const unwatch = watchHostAddresses(
      known,
      (fresh) =>
        new Promise((resolve, reject) =>
          execFile(
            "docker",
            ["exec", "--user", "0:0", holder, "sh", "-c", egressAddScript(fresh)],
            { timeout: 10_000 },
            (e) => (e ? reject(e) : resolve(undefined)),
          ),
        ),
    );
    return {
      mode: `container:${id}`,
      mounts: [],
      env: {},
      close: async () => {
        unwatch();
        await docker
          .getContainer(id)
          .remove({ force: true })
          .catch(() => undefined);
        await removeNetwork();
      },
      closeSync: () => {
        unwatch();
        spawnSync("docker", ["rm", "-f", id], { stdio: "ignore", timeout: 10_000 });
        spawnSync("docker", ["network", "rm", name], { stdio: "ignore", timeout: 10_000 });
      },
    };
  }
  return undefined;
}

/** The container's create options: every default-deny setting lives here, in one place. */
export function containerOptions(
  spec: SandboxSpec,
  options: DockerBackendOptions = {},
  net?: Pick<DockerNet, "mode" | "mounts" | "env">,
): Docker.ContainerCreateOptions {
  const tmpfs: Record<string, string> = {
    "/tmp": tmpfsOptions(options.tmpSizeBytes ?? 1024 ** 3),
    "/var/tmp": tmpfsOptions(64 * 1024 ** 2),
  };
  if (spec.scratch) tmpfs[spec.scratch.target] = tmpfsOptions(spec.scratch.sizeBytes);
  return {
    name: containerName(spec.runId),
    Image: spec.image,
    // The container only idles; tools exec into it. Init reaps the zombies execs leave behind.
    Entrypoint: ["sleep", "infinity"],
    Cmd: [],
    User: `${spec.user.uid}:${spec.user.gid}`,
    WorkingDir: spec.workdir,
    Env: envList({ PATH: DEFAULT_PATH, HOME: "/tmp", ...spec.env, ...net?.env }),
    Labels: sandboxLabels(spec),
    NetworkDisabled: !net,
    HostConfig: {
      Init: true,
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      // Never the default bridge: no network, the run's proxy namespace, or a network of the run's own.
      NetworkMode: net?.mode ?? "none",
      PidsLimit: spec.pidsLimit,
      Memory: spec.memoryBytes,
      // Equal to Memory: no swap on top of the limit.
      MemorySwap: spec.memoryBytes,
      NanoCpus: Math.round(spec.cpus * 1e9),
      ReadonlyRootfs: true,
      Tmpfs: tmpfs,
      Mounts: [
        ...spec.mounts.map((m) => ({
          Type: "bind" as const,
          Source: m.source,
          Target: m.target,
          ReadOnly: m.readOnly,
        })),
        ...(net?.mounts ?? []),
      ],
      ...(spec.gpus > 0
        ? { DeviceRequests: [{ Driver: "nvidia", Count: spec.gpus, Capabilities: [["gpu"]] }] }
        : {}),
    },
  };
}

function tmpfsOptions(sizeBytes: number): string {
  // Docker's tmpfs default is noexec; scientists compile and run programs in /tmp and /scratch.
  return `rw,exec,nosuid,nodev,size=${sizeBytes},mode=1777`;
}

function envList(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

/** Result of one raw exec: exit code plus the capped streams. */
interface RawExec {
  exitCode: number;
  stdout: CappedBuffer;
  stderr: CappedBuffer;
  watchdog: boolean;
}

class DockerSandbox implements Sandbox {
  readonly backend = "docker";
  readonly spec: SandboxSpec;
  private readonly docker: Docker;
  private readonly container: Docker.Container;
  private stopping: Promise<void> | undefined;
  /** A restart in progress: execs wait for it instead of racing into a restarting container. */
  private restarting: Promise<void> | undefined;
  private readonly untrack: () => void;

  private readonly net: DockerNet | undefined;

  constructor(docker: Docker, container: Docker.Container, spec: SandboxSpec, net?: DockerNet) {
    this.docker = docker;
    this.container = container;
    this.spec = spec;
    this.net = net;
    this.untrack = trackLive({ runId: spec.runId, stop: () => this.stop(), stopSync: () => this.stopSync() });
  }

  async exec(command: string[] | string, options: contract.ExecOptions = {}): Promise<contract.ExecResult> {
    const started = Date.now();
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const raw = await this.run(withTimeout(toArgv(command), timeoutMs), {
      cwd: options.cwd ?? this.spec.workdir,
      env: options.env ?? {},
      stdin: options.stdin,
      maxBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      timeoutMs,
      signal: options.signal,
    });
    const durationMs = Date.now() - started;
    return execResult(raw, raw.watchdog || endedByTimeout(raw.exitCode, durationMs, timeoutMs), durationMs);
  }

  readFile(path: string): Promise<Buffer> {
    return readSandboxFile(this.spec, path, this.inside);
  }

  writeFile(path: string, data: string | Buffer): Promise<void> {
    return writeSandboxFile(this.spec, path, data, this.inside);
  }

  /** Runner commands inside (file access): cwd `/`, no extra environment, the default deadline. */
  private readonly inside: InsideRun = (argv, opts) =>
    this.run(argv, {
      cwd: "/",
      env: {},
      stdin: opts.stdin,
      maxBytes: opts.maxBytes,
      timeoutMs: DEFAULT_TIMEOUT_MS,
    });

  stop(): Promise<void> {
    this.stopping ??= this.remove();
    return this.stopping;
  }

  async alive(): Promise<boolean> {
    const info = await this.container.inspect().catch(() => undefined);
    return info?.State?.Running === true && info.State.Restarting !== true;
  }

  private async remove(): Promise<void> {
    try {
      await this.container.remove({ force: true, v: true });
    } catch (error) {
      // Already gone (404) or being removed (409) is what stop() wanted anyway.
      const code = statusCodeOf(error);
      if (code !== 404 && code !== 409)
        throw new SandboxError(`docker: cannot remove ${this.container.id}: ${messageOf(error)}`);
    } finally {
      await this.net?.close();
      this.untrack();
    }
  }

  /** The run proxy's connection records so far (`network: [hosts]`); empty without a proxy. */
  networkRecords(): ConnectionRecord[] {
    return [...(this.net?.proxy?.proxy.records ?? [])];
  }

  /** Adds an allowed host for the rest of the run (an approved request); false without a proxy. */
  allowHost(rule: string): boolean {
    if (!this.net?.proxy) return false;
    this.net.proxy.proxy.rules.addAllow(rule);
    return true;
  }

  /** Last-chance cleanup when the runner exits synchronously: the Docker CLI, if there is one. */
  private stopSync(): void {
    // Synchronous on purpose: this runs from a process 'exit' handler, where nothing async completes.
    spawnSync("docker", ["rm", "-f", this.container.id], { stdio: "ignore", timeout: 10_000 });
    this.net?.closeSync();
  }

  /**
   * Runs argv as an exec. When the runtime cannot even start the process (a fork bomb's leftovers
   * fill the pids limit, so runc has no pid for it), the sandbox is unusable until its processes
   * die: restart the container (the task folder is kept) and run the command once more.
   */
  private async run(argv: string[], opts: RunOptions): Promise<RawExec> {
    const first = await this.runOnce(argv, opts);
    if (!runtimeCouldNotStart(first)) return first;
    await this.restartContainer();
    return this.runOnce(argv, opts);
  }

  /** Runs argv as an exec, demultiplexing and capping its output, with the watchdog armed. */
  private async runOnce(argv: string[], opts: RunOptions): Promise<RawExec> {
    if (this.restarting) await this.restarting;
    if (this.stopping) throw new SandboxError(`sandbox for run ${this.spec.runId} is stopped`);
    const execId = randomUUID();
    const started = Date.now();
    const exec = await this.call("create an exec", () =>
      this.container.exec({
        Cmd: argv,
        AttachStdin: opts.stdin !== undefined,
        AttachStdout: true,
        AttachStderr: true,
        WorkingDir: opts.cwd,
        Env: envList({ ...this.spec.env, ...opts.env, [EXEC_MARKER]: execId }),
      }),
    );
    const stream = await this.call("start the exec", () =>
      exec.start({ hijack: true, stdin: opts.stdin !== undefined }),
    );
    const stdout = new CappedBuffer(opts.maxBytes);
    const stderr = new CappedBuffer(opts.maxBytes);
    this.collect(stream, stdout, stderr);
    if (opts.stdin !== undefined) stream.end(opts.stdin);
    const watchdog = this.armWatchdog(execId, opts.timeoutMs);
    // An abort (the quota guard) kills like the watchdog: the exec's processes, else a restart.
    const aborted = this.onAbort(opts.signal, execId);
    let exitCode: number;
    try {
      exitCode = await this.waitForExit(exec, stream);
    } finally {
      // Disarmed before any recovery below, so no watchdog step fires in the middle of it.
      watchdog.disarm();
      aborted.disarm();
      stream.destroy();
    }
    // `timeout` kills its process group; children that left it (setsid, daemons) are swept too.
    if (
      watchdog.fired() ||
      aborted.fired() ||
      endedByTimeout(exitCode, Date.now() - started, opts.timeoutMs)
    ) {
      await this.recoverAfterTimeout(execId);
    }
    return { exitCode, stdout, stderr, watchdog: watchdog.fired() };
  }

  private collect(stream: Duplex, stdout: CappedBuffer, stderr: CappedBuffer): void {
    const out = new PassThrough();
    const err = new PassThrough();
    // A container restarted under a live exec resets its stream: that ends the exec, it is no crash.
    stream.on("error", () => undefined);
    out.on("data", (chunk: Buffer) => stdout.push(chunk));
    err.on("data", (chunk: Buffer) => stderr.push(chunk));
    this.docker.modem.demuxStream(stream, out, err);
  }

  /**
   * Waits until the exec's process has really ended: the stream closing is the fast path, and a
   * slower inspect poll covers a stream held open by a background grandchild. The exit code is read
   * from inspect only once Running is false.
   */
  private async waitForExit(exec: Docker.Exec, stream: Duplex): Promise<number> {
    const streamEnded = new Promise<void>((done) => {
      stream.once("end", done);
      stream.once("close", done);
      stream.once("error", () => done());
    });
    let finished = false;
    const slowPoll = (async () => {
      while (!finished) {
        await sleep(250);
        if (finished) return;
        const info = await exec.inspect().catch(() => undefined);
        if (info && !info.Running) return;
      }
    })();
    await Promise.race([streamEnded, slowPoll]);
    // Let demux flush what already arrived (the stream may still be open if a child holds it).
    await Promise.race([streamEnded, sleep(100)]);
    finished = true;
    const info = await pollUntil(
      async () => {
        const i = await exec.inspect();
        return i.Running ? undefined : i;
      },
      "the exec to end",
      60_000,
      10,
    );
    return info.ExitCode ?? -1;
  }

  /** Kills the exec when `signal` aborts: its processes first, a container restart if that fails or is slow. */
  private onAbort(
    signal: AbortSignal | undefined,
    execId: string,
  ): { fired: () => boolean; disarm: () => void } {
    let fired = false;
    let fallback: NodeJS.Timeout | undefined;
    const kill = () => {
      fired = true;
      void this.killExecProcesses(execId)
        .catch(() => false)
        .then((ok) => (ok ? undefined : this.restartContainer()));
      fallback = setTimeout(() => void this.restartContainer(), 10_000);
    };
    if (signal?.aborted) kill();
    else signal?.addEventListener("abort", kill, { once: true });
    return {
      fired: () => fired,
      disarm: () => {
        signal?.removeEventListener("abort", kill);
        clearTimeout(fallback);
      },
    };
  }

  /**
   * Host-side deadline behind `timeout -k`: first kill every process carrying the exec's marker,
   * then, if the exec still runs (say a fork bomb left no pid to run `kill` with), restart the container.
   */
  private armWatchdog(execId: string, timeoutMs: number): { fired: () => boolean; disarm: () => void } {
    let fired = false;
    const timers: NodeJS.Timeout[] = [];
    const after = (ms: number, action: () => Promise<void>) =>
      timers.push(setTimeout(() => void action().catch(() => undefined), ms));
    // `timeout -k` has sent KILL by deadline + KILL_GRACE_SEC; allow the engine a few seconds more
    // (a loaded machine reports an exec's end late) before acting from the host.
    const grace = (KILL_GRACE_SEC + 5) * 1000;
    after(timeoutMs + grace, async () => {
      fired = true;
      if (!(await this.killExecProcesses(execId).catch(() => false))) await this.restartContainer();
    });
    after(timeoutMs + grace + 10_000, async () => {
      await this.restartContainer();
    });
    return {
      fired: () => fired,
      disarm: () => {
        for (const t of timers) clearTimeout(t);
      },
    };
  }

  /**
   * Kills every process whose environment carries this exec's marker (also ones that called setsid),
   * twice, then checks none is left. False when any survived or the shell could not fork (dash exits
   * on a failed fork): the caller then restarts the container.
   */
  private async killExecProcesses(execId: string): Promise<boolean> {
    const match = `grep -qz '^${EXEC_MARKER}=${execId}$' "$p/environ" 2>/dev/null`;
    const killAll = `for p in /proc/[0-9]*; do ${match} && kill -KILL "\${p#/proc/}" 2>/dev/null; done`;
    const noneLeft = `for p in /proc/[0-9]*; do if ${match}; then exit 1; fi; done; exit 0`;
    return this.quickExec(["sh", "-c", `${killAll}; ${killAll}; ${noneLeft}`]);
  }

  /**
   * After a timeout: sweep the exec's leftovers; if the sweep cannot run or the container cannot
   * start even `true` afterwards (a fork bomb filling the pids limit leaves no pid for either),
   * restart the container. A restart empties /tmp and /scratch; the task folder is kept.
   */
  private async recoverAfterTimeout(execId: string): Promise<void> {
    if (this.restarting) return this.restarting;
    const swept = await this.killExecProcesses(execId).catch(() => false);
    if (swept && (await this.quickExec(["true"]).catch(() => false))) return;
    await this.restartContainer();
  }

  /** Kills everything in the container and starts it again; concurrent callers share one restart. */
  private restartContainer(): Promise<void> {
    this.restarting ??= this.container
      .restart({ t: 0 })
      .then(() => undefined)
      .catch(() => undefined)
      .finally(() => {
        this.restarting = undefined;
      });
    return this.restarting;
  }

  /** Runs a short helper command; true when it ran and exited 0 within a few seconds. */
  private async quickExec(argv: string[]): Promise<boolean> {
    const exec = await this.container.exec({ Cmd: argv, AttachStdout: false, AttachStderr: false });
    await exec.start({ Detach: true });
    const info = await pollUntil(
      async () => {
        const i = await exec.inspect();
        return i.Running ? undefined : i;
      },
      "a helper exec to end",
      10_000,
      20,
    ).catch(() => undefined);
    return info?.ExitCode === 0;
  }

  private async call<T>(what: string, action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (error) {
      throw new SandboxError(`docker: cannot ${what} in run ${this.spec.runId}: ${messageOf(error)}`);
    }
  }
}

/** Removes containers of `scope.home` whose owner is gone (core.ts mayPrune decides). */
async function pruneContainers(docker: Docker, scope: contract.PruneScope): Promise<string[]> {
  const containers = await docker.listContainers({ all: true, filters: { label: ["scifi=1"] } });
  const removed: string[] = [];
  for (const info of containers) {
    const runId = info.Labels["scifi.run"] ?? "";
    if (!mayPrune(runId, ownerFromLabels(info.Labels), scope)) continue;
    await docker
      .getContainer(info.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
    removed.push(`${info.Names[0]?.replace(/^\//, "") ?? info.Id} (run ${runId})`);
  }
  // The runs' own networks (`network: true`), once their containers are gone.
  const networks = await docker.listNetworks({ filters: { label: ["scifi=1"] } }).catch(() => []);
  for (const info of networks) {
    const labels = info.Labels ?? {};
    const runId = labels["scifi.run"] ?? "";
    if (!mayPrune(runId, ownerFromLabels(labels), scope)) continue;
    await docker
      .getNetwork(info.Id)
      .remove()
      .catch(() => undefined);
    removed.push(`network ${info.Name} (run ${runId})`);
  }
  return removed;
}

/** The owner as container labels (the engine keeps them; nothing inside the container sees them). */
function ownerLabels(owner: contract.SandboxOwner): Record<string, string> {
  return {
    "scifi.host": owner.host,
    "scifi.pid": String(owner.pid),
    ...(owner.procStart !== undefined ? { "scifi.procstart": owner.procStart } : {}),
    ...(owner.home !== undefined ? { "scifi.home": owner.home } : {}),
  };
}

function ownerFromLabels(labels: Record<string, string>): Partial<contract.SandboxOwner> {
  return {
    host: labels["scifi.host"],
    pid: Number(labels["scifi.pid"]),
    procStart: labels["scifi.procstart"],
    home: labels["scifi.home"],
  };
}

interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  stdin?: string | Buffer;
  maxBytes: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/** The engine answered the exec with a runtime error instead of running it (exit 126/127 from runc). */
function runtimeCouldNotStart(raw: RawExec): boolean {
  if (raw.exitCode !== 126 && raw.exitCode !== 127 && raw.exitCode !== -1) return false;
  const said = `${raw.stdout.bytes().toString("utf8")}${raw.stderr.bytes().toString("utf8")}`;
  return /^OCI runtime exec failed/m.test(said);
}

function statusCodeOf(error: unknown): number | undefined {
  return typeof error === "object" && error !== null && "statusCode" in error
    ? Number(error.statusCode)
    : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
