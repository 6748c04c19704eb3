// Docker backend (dockerode): one long-lived container per run, every tool call an exec into it.
// The container is default-deny: no capabilities, no-new-privileges, no network unless granted,
// pids/memory/cpu limits, read-only root filesystem, the invoking user's uid:gid, and only the binds
// the policy resolved. Docker's exec API cannot kill, so deadlines are enforced in layers: `timeout -k`
// inside, then a host-side watchdog that kills every process of the exec, then a container restart.
// The backend's pieces live in runner/sandbox/docker/: engine.ts (the engine answers, the image is
// there), options.ts (the container's create options), net.ts (its network), sandbox.ts (the
// class: execs, deadlines, stop), prune.ts (owner labels, prune).
import Docker from "dockerode";
import { type SandboxSpec, sandboxName } from "../policy/spec.ts";
import { dockerStatus, messageOf, requireImage } from "./docker/engine.ts";
import { startDockerNet } from "./docker/net.ts";
import { containerOptions, type DockerBackendOptions } from "./docker/options.ts";
import { pruneContainers } from "./docker/prune.ts";
import { DockerSandbox } from "./docker/sandbox.ts";
import { startGuarded } from "./guard.ts";
import { type Sandbox, type SandboxBackend, SandboxStartFailed } from "./types.ts";

export { containerName } from "./docker/labels.ts";
export type { DockerNet } from "./docker/net.ts";
export { containerOptions, type DockerBackendOptions } from "./docker/options.ts";

export function createDockerBackend(options: DockerBackendOptions = {}): SandboxBackend {
  const docker = options.docker ?? new Docker();
  return {
    name: "docker",
    status: () => dockerStatus(docker),
    start: (spec) => startGuarded(spec, (s) => startDockerSandbox(docker, s, options), { backend: "docker" }),
    prune: (scope) => pruneContainers(docker, scope),
  };
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
    throw new SandboxStartFailed(
      `docker: cannot create the container for run ${sandboxName(spec)}: ${messageOf(error)}`,
    );
  }
  const sandbox = new DockerSandbox(docker, container, spec, net);
  try {
    await container.start();
  } catch (error) {
    await sandbox.stop();
    throw new SandboxStartFailed(
      `docker: cannot start the container for run ${sandboxName(spec)}: ${messageOf(error)}`,
    );
  }
  return sandbox;
}
