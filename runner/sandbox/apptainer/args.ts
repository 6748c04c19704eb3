// What apptainer is started with: instance and SIF names, `instance start` arguments (binds, network,
// cgroup limits), and the exec wrapper with its environment (rlimits, Apptainer's variables unset).
import { stat } from "node:fs/promises";
import { join, posix } from "node:path";
import type { MountSpec, SandboxSpec } from "../../policy/spec.ts";
import { bindablePath, bindSpec } from "../bind-spec.ts";
import * as contract from "../types.ts";
import { BACKEND, type BackendContext } from "./engine.ts";

export const NAME_PREFIX = "scifi-";

/**
 * Variables Apptainer puts into every exec's environment although `--cleanenv` is given: they name
 * host paths (the SIF file) and the instance. The wrapper unsets them.
 */
export const APPTAINER_ENV = [
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
export const EXEC_WRAPPER = [
  // bash and busybox spell the process limit -u, dash -p; prlimit (util-linux) is the fallback.
  'ulimit -u "$1" 2>/dev/null || ulimit -p "$1" 2>/dev/null || prlimit --pid $$ --nproc="$1" 2>/dev/null ||',
  '  { echo "scifi: cannot set the process limit" >&2; exit 125; }',
  'if [ "$2" != 0 ]; then ulimit -v "$2" || { echo "scifi: cannot set the memory limit" >&2; exit 125; }; fi',
  `shift 2; unset ${APPTAINER_ENV.join(" ")}`,
  'while [ "$1" != -- ]; do export "$1"; shift; done; shift',
  'exec "$@"',
].join("\n");

/** Default environment of every exec (as on Docker): PATH, and HOME in the sandbox's own /tmp. */
export const BASE_ENV = {
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  HOME: "/tmp",
};

/** Instance name for a run: only characters Apptainer accepts; prune maps names back to runs. */
export function instanceName(runId: string): string {
  return NAME_PREFIX + runId.replace(/[^A-Za-z0-9_.-]/g, "_");
}

/** SIF file name for a Docker reference, as scripts/apptainer-harness.sh names it. */
export function sifFileName(image: string): string {
  return `${image.replace(/[/:@]/g, "_")}.sif`;
}

export async function resolveSif(ctx: BackendContext, image: string): Promise<string> {
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

/** Bind sources and targets go into Apptainer's `src:dst:opts` syntax (bind-spec.ts bindablePath). */
export function checkBindable(path: string, mount: MountSpec): void {
  bindablePath(path, mount.reason);
}

/** `--bind` arguments, parents before children so the SAM file lands read-only on top of /task. */
export function bindArgs(mounts: readonly MountSpec[]): string[] {
  const ordered = [...mounts].sort((a, b) => depth(a.target) - depth(b.target));
  return ordered.flatMap((m) => ["--bind", bindSpec(m.source, m.target, m.readOnly ? "ro" : "rw", m.reason)]);
}

export function depth(target: string): number {
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

/** Apptainer's --nv shows every GPU; the spec's count is honoured through the CUDA variables. */
export function gpuEnv(gpus: number): Record<string, string> {
  if (gpus <= 0) return {};
  const host = process.env.CUDA_VISIBLE_DEVICES?.split(",").filter(Boolean);
  const ids =
    host && host.length > 0 ? host.slice(0, gpus) : Array.from({ length: gpus }, (_, i) => String(i));
  return { CUDA_VISIBLE_DEVICES: ids.join(",") };
}

/** `KEY=value` words for env(1): passed as argv, so values need no quoting and cannot inject. */
export function envAssignments(env: Record<string, string>): string[] {
  return Object.entries(env).map(([key, value]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      throw new contract.SandboxError(
        `invalid environment variable name '${key}': use letters, digits and '_'`,
      );
    }
    return `${key}=${value}`;
  });
}
