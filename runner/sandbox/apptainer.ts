// Apptainer backend: one long-lived `apptainer instance` per run, tools `exec` into it. Runs as the
// calling (non-root) user with user namespaces, exactly as on a cluster: no setuid, no root.
// Limits that need root or delegated cgroups are enforced otherwise: pids and memory with rlimits in
// the exec wrapper, cpus with CPU affinity; docs/apptainer.md explains each gap and what holds instead.
// What Docker does alike is shared, not copied: output caps and the timeout rule (output.ts), file
// access (core.ts over policy/host-paths.ts), owners and prune (core.ts), live registry and signals
// (live.ts).
// The backend's pieces live in runner/sandbox/apptainer/, one responsibility each: engine.ts (the
// apptainer binary), args.ts (start and exec arguments), scratch.ts, cpus.ts (pinning), seal.ts
// (seccomp, /proc/1 mask, the seal), capture.ts (network capture), process-tree.ts (the kill of an
// exec's tree), capped.ts (the capped exec process), sandbox.ts (the class), prune.ts (owners, prune).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { noteCaptureOff, PROXY_MOUNT, type RunProxyOptions, startRunProxy } from "../network/run-proxy.ts";
import { type SandboxSpec, sandboxName } from "../policy/spec.ts";
import { instanceName, instanceStartArgs, proxiedRules, resolveSif } from "./apptainer/args.ts";
import { setUpCapture } from "./apptainer/capture.ts";
import { cpuPinning } from "./apptainer/cpus.ts";
import { apptainerStatus, BACKEND, type BackendContext, runApptainer } from "./apptainer/engine.ts";
import { findNsInit } from "./apptainer/process-tree.ts";
import { OWNER_FILE, type OwnerRecord, pruneInstances } from "./apptainer/prune.ts";
import { ApptainerSandbox, NODE_IN_SANDBOX } from "./apptainer/sandbox.ts";
import { makeScratchImage } from "./apptainer/scratch.ts";
import { hardeningArgs, sealInstance } from "./apptainer/seal.ts";
import { bindSpec, mountSpec } from "./bind-spec.ts";
import * as core from "./core.ts";
import { startGuarded } from "./guard.ts";
import * as contract from "./types.ts";

// What tests, benchmarks and the jobs code use of the backend's pieces.
export { bindArgs, instanceName, instanceStartArgs, proxiedRules, sifFileName } from "./apptainer/args.ts";
export { pickCpus } from "./apptainer/cpus.ts";
export { execCommandLine } from "./apptainer/sandbox.ts";
export { seccompProfile } from "./apptainer/seal.ts";

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

async function startSandbox(ctx: BackendContext, spec: SandboxSpec): Promise<contract.Sandbox> {
  const sif = await resolveSif(ctx, spec.image);
  const name = instanceName(sandboxName(spec));
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
      args.push("--mount", mountSpec(image, spec.scratch.target, "image-src=/", "the scratch image"));
    }
    if (proxy)
      args.push(
        "--bind",
        bindSpec(proxy.dir, PROXY_MOUNT, "ro", "the run proxy's socket folder"),
        "--bind",
        bindSpec(process.execPath, NODE_IN_SANDBOX, "ro", "the runner's node, for the proxy forwarder"),
      );
    args.push(sif, name);
    const r = await runApptainer(ctx, ["-q", ...args]);
    if (r.exitCode !== 0) {
      throw new contract.SandboxStartFailed(
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
