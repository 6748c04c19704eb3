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

export function tmpfsOptions(sizeBytes: number): string {
  // Docker's tmpfs default is noexec; scientists compile and run programs in /tmp and /scratch.
  return `rw,exec,nosuid,nodev,size=${sizeBytes},mode=1777`;
}

export function envList(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}
