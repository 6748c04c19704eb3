// A Docker sandbox's network, when it has one: the forwarder to the run's proxy (`network: [hosts]`)
// or a bridge network of the run's own behind the egress filter (`network: true`), each owned by a
// namespace-holding container the agent cannot stop. The labels every scifi container carries.
import { execFile, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import type Docker from "dockerode";
import {
  egressAddScript,
  egressFilterScript,
  embeddedDnsReachesHost,
  hostAddresses,
  watchHostAddresses,
} from "../../network/egress.ts";
import { noteCaptureOff, PROXY_MOUNT, type RunProxy, startRunProxy } from "../../network/run-proxy.ts";
import { type SandboxSpec, sandboxName } from "../../policy/spec.ts";
import { pollUntil } from "../output.ts";
import { SandboxStartFailed } from "../types.ts";
import { messageOf } from "./engine.ts";
import { bridgeName, dropHostInput, guardHostInput } from "./host-input.ts";
import { containerName, sandboxLabels } from "./labels.ts";
import type { ContainerNet, DockerBackendOptions } from "./options.ts";

/** Whether this host's resolver, as dockerd picks it, is on loopback (egress.ts embeddedDnsReachesHost). */
function hostDnsOnLoopback(): boolean {
  const read = (path: string) => {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  };
  return embeddedDnsReachesHost(read("/etc/resolv.conf") ?? "", read("/run/systemd/resolve/resolv.conf"));
}

/**
 * The sandbox's network when it has one. `network: [hosts]`: a forwarder container owns a network
 * namespace with nothing but loopback (NetworkMode none) and listens there on 127.0.0.1:3128 for the
 * run's proxy, reached through its unix socket; the sandbox joins that namespace. It outlives a
 * restart of the sandbox, and the agent (another pid namespace) cannot stop it. `network: true`: a
 * bridge network of the run's own, never the shared default bridge.
 */
export interface DockerNet extends ContainerNet {
  proxy?: RunProxy;
  close(): Promise<void>;
  closeSync(): void;
}

/**
 * A container that owns a sandbox's network namespace (`scifi-<run>-net`): started as root with
 * only the capabilities to set the namespace up (NET_ADMIN there, and to drop to a uid), read-only,
 * small; it prints `ready` once set up and then runs unprivileged. Returns it with what it printed;
 * removed again (and the error says what it printed) when it exits or never gets ready.
 */
export async function startNamespaceHolder(
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
      name: `${containerName(sandboxName(spec))}-net`,
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

export async function startDockerNet(
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
      throw new SandboxStartFailed(
        `docker: cannot start the network forwarder for run ${sandboxName(spec)} (the image needs python3 for it): ${messageOf(error)}`,
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
    const name = containerName(sandboxName(spec));
    try {
      await docker.createNetwork({
        Name: name,
        Driver: "bridge",
        CheckDuplicate: true,
        Labels: sandboxLabels(spec),
        Options: {
          "com.docker.network.bridge.enable_icc": "false",
          // A name of ours, so this host's INPUT chain can refuse the bridge (host-input.ts).
          "com.docker.network.bridge.name": bridgeName(name),
        },
      });
    } catch (error) {
      throw new SandboxStartFailed(
        `docker: cannot create the network for run ${sandboxName(spec)}: ${messageOf(error)}`,
      );
    }
    const removeNetwork = () => {
      dropHostInput(bridgeName(name));
      return docker
        .getNetwork(name)
        .remove()
        .catch(() => undefined);
    };
    // The holder owns the sandbox's namespace on that network, with the egress filter in it.
    const rules = spec.openNetwork?.rules ?? { allow: ["*"], deny: [], allowedPrivateRanges: [] };
    const drop = `exec setpriv --reuid=${spec.user.uid} --regid=${spec.user.gid} --clear-groups --inh-caps=-all --bounding-set=-all sleep infinity`;
    let id: string;
    const known = hostAddresses();
    try {
      const { container } = await startNamespaceHolder(docker, spec, {
        role: "network-holder",
        entrypoint: [
          "sh",
          "-c",
          `${egressFilterScript(rules, known, undefined, hostDnsOnLoopback())}${drop}\n`,
        ],
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
      throw new SandboxStartFailed(
        `docker: cannot set up network: true for run ${sandboxName(spec)} (the image needs iptables and setpriv to keep this host and the LAN out; the scifi images have them): ${messageOf(error)}`,
      );
    }
    // This host refused per packet on its own side (a root runner), whatever address it gets later.
    await guardHostInput(bridgeName(name), rules.allowedPrivateRanges);
    // An address this host gets later is refused in the namespace too (the holder keeps NET_ADMIN
    // for a root exec): the only guard for a non-root runner, within about a second.
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
        dropHostInput(bridgeName(name));
        spawnSync("docker", ["network", "rm", name], { stdio: "ignore", timeout: 10_000 });
      },
    };
  }
  return undefined;
}
