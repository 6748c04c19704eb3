// The running Apptainer sandbox: execs into the instance under the wrapper, file access through
// core.ts, the network forwarder, and stop (instance, proxy, state folder).
import { type ChildProcess, spawn } from "node:child_process";
import { readdir, rm } from "node:fs/promises";
import { posix } from "node:path";
import { PROXY_MOUNT, type RunProxy } from "../../network/run-proxy.ts";
import { type SandboxSpec, sandboxName } from "../../policy/spec.ts";
import * as core from "../core.ts";
import { pidNamespaceOf } from "../held-files.ts";
import { trackLive } from "../live.ts";
import * as output from "../output.ts";
import * as contract from "../types.ts";
import { BASE_ENV, EXEC_WRAPPER, envAssignments, gpuEnv } from "./args.ts";
import { runCapped } from "./capped.ts";
import {
  apptainerEnv,
  BACKEND,
  type BackendContext,
  listInstances,
  NEUTRAL_CWD,
  stopInstance,
  stopInstanceSync,
} from "./engine.ts";
import { killExecTree, type NsInit } from "./process-tree.ts";
import { sealInstance } from "./seal.ts";

/** The in-container `timeout` is a backup: it fires this long after the host-side kill. */
export const BACKUP_TIMEOUT_SLACK_SEC = 2;

/** The last-resort watchdog (kill the apptainer process group) fires this long after that. */
export const HOST_WATCHDOG_SLACK_MS = 5_000;

export class ApptainerSandbox implements contract.Sandbox {
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
    started.set(sandboxName(spec), this);
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

  /** The instance's PID namespace (its init's), for the quota's count of held deleted files. */
  pidNamespace(): Promise<string | undefined> {
    return this.#nsInit ? pidNamespaceOf(this.#nsInit.pid) : Promise.resolve(undefined);
  }

  async alive(): Promise<boolean> {
    const names = await listInstances(this.#ctx).catch(() => undefined);
    return names === undefined || names.includes(this.#name);
  }

  /**
   * Always: the instance's init (appinit, a Go program) handles nearly every signal, and any process
   * of the instance, running as the same user in its PID namespace, can send one (`kill -TERM 1`).
   * Nothing outside but the runner's own user can: on a cluster, a death the runner did not cause
   * is the sandbox's own doing or its memory limit (docs/apptainer.md).
   */
  endedFromInside(): Promise<boolean> {
    return Promise.resolve(true);
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
      started.delete(sandboxName(this.spec));
      await rm(this.#stateDir, { recursive: true, force: true });
    }
  }

  /** Synchronous last resort for process exit: the instance must not outlive the runner. */
  stopSync(): void {
    stopInstanceSync(this.#ctx, this.#name);
  }
}

/** Where the runner's node binary appears in an instance with a host list (the forwarder runs on it). */
export const NODE_IN_SANDBOX = "/run/scifi-node";

/** The sandboxes this process started and has not stopped, by sandbox name (for execCommandLine). */
export const started = new Map<string, ApptainerSandbox>();

/**
 * The host command line an exec of `argv` in the running sandbox named `name` (sandboxName) would run, for the
 * benchmark (test/sandbox/apptainer/bench-exec.ts); undefined when no such sandbox runs here.
 */
export function execCommandLine(name: string, argv: string[]): string[] | undefined {
  return started.get(name)?.commandLine(argv);
}

export interface RawExec extends core.InsideResult {
  timedOut: boolean;
  durationMs: number;
}
