// The container's create options: every default-deny setting of a Docker sandbox, in one place.
import type Docker from "dockerode";
import type { RunProxyOptions } from "../../network/run-proxy.ts";
import { type SandboxSpec, sandboxName } from "../../policy/spec.ts";
import { containerName, sandboxLabels } from "./labels.ts";

export interface DockerBackendOptions {
  /** A ready dockerode client (tests, remote engines); default: the local socket / DOCKER_HOST. */
  docker?: Docker;
  /** Size of the tmpfs at /tmp (the root filesystem is read-only). Default 1 GiB. */
  tmpSizeBytes?: number;
  /** The run proxy's own resolver configuration and record sink (`network: [hosts]`). */
  proxy?: RunProxyOptions;
}

export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** What the container's options take of its network (net.ts DockerNet). */
export interface ContainerNet {
  /** The sandbox's NetworkMode. */
  mode: string;
  mounts: { Type: "bind"; Source: string; Target: string; ReadOnly: boolean }[];
  env: Record<string, string>;
}

/** The container's create options: every default-deny setting lives here, in one place. */
export function containerOptions(
  spec: SandboxSpec,
  options: DockerBackendOptions = {},
  net?: ContainerNet,
): Docker.ContainerCreateOptions {
  const tmpfs: Record<string, string> = {
    "/tmp": tmpfsOptions(options.tmpSizeBytes ?? 1024 ** 3),
    "/var/tmp": tmpfsOptions(64 * 1024 ** 2),
  };
  if (spec.scratch) tmpfs[spec.scratch.target] = tmpfsOptions(spec.scratch.sizeBytes);
  return {
    name: containerName(sandboxName(spec)),
    Image: spec.image,
    // The container only idles; tools exec into it, each as the sandbox user (execUser).
    Entrypoint: ["sh", "-c", IDLE_SH],
    Cmd: [],
    User: IDLE_USER,
    WorkingDir: spec.workdir,
    Env: envList({ PATH: DEFAULT_PATH, HOME: "/tmp", ...spec.env, ...net?.env }),
    Labels: sandboxLabels(spec),
    NetworkDisabled: !net,
    HostConfig: {
      // No docker-init: the idler itself is the namespace's init (see IDLE_SH).
      Init: false,
      // The first process's stdout and stderr go to Docker's log on the host disk, outside the task
      // folder's quota: an agent writing to /proc/1/fd/1 must not fill it (nothing reads it).
      LogConfig: { Type: "none", Config: {} },
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

/**
 * The idler, the container's PID 1 (AE-8). It must outlive anything the agent does, since a container
 * whose first process ends is gone, and the run with it, which would turn an agent's failure into an
 * infrastructure error. The kernel delivers to a namespace's init no signal it has no handler for
 * (SIGKILL and SIGSTOP included) from inside the namespace, and the idler runs as uid 0 with every
 * capability dropped, so an agent of another uid can neither signal, ptrace nor open /proc/1/fd.
 * With docker-init the idler was its child, killable by `kill -9 -1`. SIGCHLD ignored makes the
 * kernel reap the orphans PID 1 adopts (what docker-init was for): env(1) sets it across exec
 * (coreutils 8.31+), else perl; an image with neither keeps an unkillable idler that reaps nothing.
 */
export const IDLE_SH = [
  "if env --ignore-signal=CHLD true 2>/dev/null; then exec env --ignore-signal=CHLD sleep infinity; fi",
  `if command -v perl >/dev/null 2>&1; then exec perl -e '$SIG{CHLD}="IGNORE"; exec "sleep", "infinity"'; fi`,
  "exec sleep infinity",
].join("\n");

/** PID 1's user: root without capabilities (above), never the sandbox user. */
export const IDLE_USER = "0:0";

/** Who every exec runs as: the sandbox user, always set (the container's own user is the idler's). */
export function execUser(spec: Pick<SandboxSpec, "user">): string {
  return `${spec.user.uid}:${spec.user.gid}`;
}

export function tmpfsOptions(sizeBytes: number): string {
  // Docker's tmpfs default is noexec; scientists compile and run programs in /tmp and /scratch.
  return `rw,exec,nosuid,nodev,size=${sizeBytes},mode=1777`;
}

export function envList(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}
