// The network tests' and bench's test hosts: a Docker network of their own with one or more
// containers serving test/network/test-host.py (HTTP on 8000, HTTPS on 8443 when certs are given, a
// body of any size at /bytes/<n>), optionally behind a shaped link (tc tbf on the host's interface).
import { resolve } from "node:path";
import Docker from "dockerode";

const docker = new Docker();
const SCRIPT = resolve(import.meta.dirname, "test-host.py");

export interface TestHostOptions {
  /** Container name (default: Docker picks one). */
  name?: string;
  /** A folder with cert.pem and key.pem: HTTPS on 8443 too. */
  certs?: string;
  /** Link rate in tc syntax (`1gbit`): the host's replies leave through a token bucket of that rate. */
  shape?: string;
}

export interface TestNet {
  name: string;
  /** Starts one more test host on the network; its address. */
  host(options?: TestHostOptions): Promise<string>;
  /** Removes the hosts and the network. */
  remove(): Promise<void>;
}

/** A bridge network with the given subnet, for test hosts. */
export async function testNet(name: string, subnet: string, image = "scifi-sci:local"): Promise<TestNet> {
  const create = () =>
    docker.createNetwork({ Name: name, Driver: "bridge", IPAM: { Config: [{ Subnet: subnet }] } });
  try {
    await create();
  } catch (error) {
    // A test run killed before its cleanup leaves its network on the subnet: remove such a leftover
    // (a scifi test network with no container on it) and try once more.
    if (!/overlaps/i.test(String(error))) throw error;
    for (const info of await docker.listNetworks()) {
      if (!info.Name.startsWith("scifi-") || info.IPAM?.Config?.[0]?.Subnet !== subnet) continue;
      const detail = await docker.getNetwork(info.Id).inspect();
      if (Object.keys(detail.Containers ?? {}).length === 0)
        await docker
          .getNetwork(info.Id)
          .remove()
          .catch(() => undefined);
    }
    await create();
  }
  const containers: Docker.Container[] = [];
  return {
    name,
    async host(options = {}) {
      // Root only for tc (NET_ADMIN in its own namespace), then nobody serves.
      const serve = "exec setpriv --reuid=65534 --regid=65534 --clear-groups python3 /srv/test-host.py";
      const c = await docker.createContainer({
        ...(options.name ? { name: options.name } : {}),
        Image: image,
        Entrypoint: [
          "sh",
          "-c",
          options.shape
            ? `tc qdisc replace dev eth0 root tbf rate ${options.shape} burst 1mb latency 50ms && ${serve}`
            : serve,
        ],
        User: "0:0",
        HostConfig: {
          NetworkMode: name,
          CapDrop: ["ALL"],
          CapAdd: ["NET_ADMIN", "SETUID", "SETGID", "SETPCAP"],
          Binds: [`${SCRIPT}:/srv/test-host.py:ro`, ...(options.certs ? [`${options.certs}:/certs:ro`] : [])],
        },
      });
      containers.push(c);
      await c.start();
      for (let i = 0; i < 100; i++) {
        const info = await c.inspect();
        if (!info.State.Running)
          throw new Error(`the test host exited: ${String(await c.logs({ stdout: true, stderr: true }))}`);
        if (String(await c.logs({ stdout: true, stderr: true })).includes("test host ready"))
          return info.NetworkSettings.Networks[name]?.IPAddress ?? "";
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error("the test host did not start");
    },
    async remove() {
      for (const c of containers) await c.remove({ force: true }).catch(() => undefined);
      await docker
        .getNetwork(name)
        .remove()
        .catch(() => undefined);
    },
  };
}
