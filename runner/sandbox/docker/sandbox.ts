// The running Docker sandbox: every tool call an exec into the container, its output demultiplexed
// and capped, its deadline enforced in layers (`timeout -k` inside, a host-side watchdog that kills
// the exec's processes, then a container restart), file access through core.ts, and stop.
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { type Duplex, PassThrough } from "node:stream";
import type Docker from "dockerode";
import type { ConnectionRecord } from "../../memory/history-events.ts";
import { type SandboxSpec, sandboxName } from "../../policy/spec.ts";
import { execResult, type InsideRun, readSandboxFile, writeSandboxFile } from "../core.ts";
import { pidNamespaceOf } from "../held-files.ts";
import { trackLive } from "../live.ts";
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
} from "../output.ts";
import type * as contract from "../types.ts";
import { type Sandbox, SandboxError } from "../types.ts";
import { messageOf, statusCodeOf } from "./engine.ts";
import { fallocateFilterPrefix } from "./fallocate-filter.ts";
import type { DockerNet } from "./net.ts";
import { envList, execUser } from "./options.ts";

/** Every process of one exec carries this variable, so the watchdog can find and kill them all. */
export const EXEC_MARKER = "SCIFI_EXEC_ID";

/** Result of one raw exec: exit code plus the capped streams. */
export interface RawExec {
  exitCode: number;
  stdout: CappedBuffer;
  stderr: CappedBuffer;
  watchdog: boolean;
}

export class DockerSandbox implements Sandbox {
  readonly backend = "docker";
  readonly spec: SandboxSpec;
  private readonly docker: Docker;
  private readonly container: Docker.Container;
  private stopping: Promise<void> | undefined;
  /** A restart in progress: execs wait for it instead of racing into a restarting container. */
  private restarting: Promise<void> | undefined;
  private readonly untrack: () => void;

  private readonly net: DockerNet | undefined;
  /** The argv prefix of every tool exec (fallocate-filter.ts), once probed: empty without perl. */
  private filterPrefix: Promise<string[]> | undefined;
  /** Host pid of the container's init, once read (pidNamespace). */
  private initPid: number | undefined;

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
    const filter = await this.fallocateFilter();
    const raw = await this.run([...filter, ...withTimeout(toArgv(command), timeoutMs)], {
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

  /** Probes once whether the image can install the filter; an image without perl runs without it. */
  private fallocateFilter(): Promise<string[]> {
    const prefix = fallocateFilterPrefix();
    this.filterPrefix ??= this.inside([...prefix, "true"], { maxBytes: 4096 }).then(
      (r) => (r.exitCode === 0 ? prefix : []),
      () => [],
    );
    return this.filterPrefix;
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
    // A restart of its own (a timeout's or the quota's recovery) is no death: it is waited for.
    if (this.restarting) await this.restarting;
    const info = await this.container.inspect().catch(() => undefined);
    return info?.State?.Running === true && info.State.Restarting !== true;
  }

  /** The memory cgroup killed it: its own limit, hit by what ran in it (a process cannot signal PID 1). */
  async endedFromInside(): Promise<boolean> {
    const info = await this.container.inspect().catch(() => undefined);
    return info?.State?.OOMKilled === true;
  }

  /**
   * The container's PID namespace (its init's, which every exec joins), for the quota's count of
   * held deleted files; read again after a restart gave the container a new init.
   */
  async pidNamespace(): Promise<string | undefined> {
    if (this.initPid !== undefined) {
      const ns = await pidNamespaceOf(this.initPid);
      if (ns) return ns;
    }
    const info = await this.container.inspect().catch(() => undefined);
    this.initPid = info?.State?.Running ? info.State.Pid : undefined;
    return this.initPid ? pidNamespaceOf(this.initPid) : undefined;
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
    if (this.stopping) throw new SandboxError(`sandbox for run ${sandboxName(this.spec)} is stopped`);
    const execId = randomUUID();
    const started = Date.now();
    const exec = await this.call("create an exec", () =>
      this.container.exec({
        Cmd: argv,
        User: execUser(this.spec),
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
    // The abort's kill (and the restart it may start) ends before the exec is answered, so no
    // restart of its own is still under way when the caller asks whether the sandbox lives.
    await aborted.settled();
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
  ): { fired: () => boolean; settled: () => Promise<void>; disarm: () => void } {
    let fired = false;
    let fallback: NodeJS.Timeout | undefined;
    let killing: Promise<void> | undefined;
    const kill = () => {
      fired = true;
      killing = this.killExecProcesses(execId)
        .catch(() => false)
        .then((ok) => (ok ? undefined : this.restartContainer()));
      fallback = setTimeout(() => void this.restartContainer(), 10_000);
    };
    if (signal?.aborted) kill();
    else signal?.addEventListener("abort", kill, { once: true });
    return {
      fired: () => fired,
      settled: () => killing ?? Promise.resolve(),
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
    const exec = await this.container.exec({
      Cmd: argv,
      User: execUser(this.spec),
      AttachStdout: false,
      AttachStderr: false,
    });
    // dockerode answers even a detached start with the HTTP response as a stream: unread, it holds
    // its engine socket open, and with it the runner's process after the run (issue 32).
    (await exec.start({ Detach: true })).destroy();
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
      throw new SandboxError(`docker: cannot ${what} in run ${sandboxName(this.spec)}: ${messageOf(error)}`);
    }
  }
}

export interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  stdin?: string | Buffer;
  maxBytes: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/** The engine answered the exec with a runtime error instead of running it (exit 126/127 from runc). */
export function runtimeCouldNotStart(raw: RawExec): boolean {
  if (raw.exitCode !== 126 && raw.exitCode !== 127 && raw.exitCode !== -1) return false;
  const said = `${raw.stdout.bytes().toString("utf8")}${raw.stderr.bytes().toString("utf8")}`;
  return /^OCI runtime exec failed/m.test(said);
}
