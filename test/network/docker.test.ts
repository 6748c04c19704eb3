// Network by host allowlist on Docker: the sandbox's only way out is the run's proxy. The test host
// is a container this test starts on a network of its own; the proxy knows it by name through its
// own resolver configuration. Every probe runs inside the sandbox (test/network/probe.py).
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { type AddressInfo, BlockList, createServer, isIP } from "node:net";
import { hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConnectionRecord } from "../../runner/memory/history-events.ts";
import { SPECIAL_RANGES } from "../../runner/network/rules.ts";
import type { SandboxSpec } from "../../runner/policy/spec.ts";
import { homeKey } from "../../runner/sandbox/core.ts";
import { bridgeName } from "../../runner/sandbox/docker/host-input.ts";
import { containerName, createDockerBackend } from "../../runner/sandbox/docker.ts";
import type { Sandbox } from "../../runner/sandbox/types.ts";
import { hasEngine } from "../helpers/engines.ts";
import { taskFolderSpec } from "../helpers/spec.ts";
import { type TestNet, testNet } from "./test-hosts.ts";

const haveDocker = hasEngine("docker");
const docker = new Docker();
const IMAGE = "scifi-sci:local";
const SUBNET = "10.213.7.0/24";
const stamp = `${process.pid}-${Date.now()}`;
const TEST_NET = `scifi-nettest-${stamp}`;
const HOST_NAME = `scifi-nettest-host-${stamp}`;
/** A public address this test gives this host for a few seconds (on a veth of its own). */
const LATE = "11.255.255.200";

let hostIp = "";
let net: TestNet | undefined;
let bridgeIp = "";
let certs = "";
const records: ConnectionRecord[] = [];
/** The proxy's own resolver configuration; filled in once the test hosts have addresses. */
const resolverHosts: Record<string, string[]> = {};
const started: Sandbox[] = [];

function spec(runId: string, over: Partial<SandboxSpec>): SandboxSpec {
  const taskDir = mkdtempSync(join(tmpdir(), "scifi-nettest-"));
  chmodSync(taskDir, 0o777);
  copyFileSync(resolve("test/network/probe.py"), join(taskDir, "probe.py"));
  chmodSync(join(taskDir, "probe.py"), 0o644);
  return taskFolderSpec({ runId, image: IMAGE, taskDir }, { walltimeSec: 120, ...over });
}

const backend = createDockerBackend({
  proxy: {
    hosts: resolverHosts,
    systemResolver: false,
    onRecord: (r) => records.push(r),
  },
});

async function start(runId: string, over: Partial<SandboxSpec>): Promise<Sandbox> {
  const sb = await backend.start(spec(runId, over));
  started.push(sb);
  return sb;
}

async function probe(sb: Sandbox, ...args: string[]): Promise<string> {
  const r = await sb.exec(["python3", "/task/probe.py", ...args], { timeoutMs: 30_000 });
  return `${r.stdout}${r.stderr}`.trim();
}

describe.skipIf(!haveDocker)("network by host allowlist (docker)", () => {
  let sb: Sandbox;
  let peer: Sandbox;
  let peerIp = "";

  beforeAll(async () => {
    certs = mkdtempSync(join(tmpdir(), "scifi-nettest-certs-"));
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=data.test",
        "-keyout",
        join(certs, "key.pem"),
        "-out",
        join(certs, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    chmodSync(join(certs, "key.pem"), 0o644);
    chmodSync(certs, 0o755);
    net = await testNet(TEST_NET, SUBNET, IMAGE);
    hostIp = await net.host({ name: HOST_NAME, certs });
    const bridge = await docker.getNetwork("bridge").inspect();
    bridgeIp = bridge.IPAM?.Config?.[0]?.Gateway ?? "172.17.0.1";
    // The proxy's own resolver: names for the test host, a loopback name and the host's bridge address.
    const hosts = resolverHosts;
    hosts["data.test"] = [hostIp];
    hosts["alias.data.test"] = [hostIp];
    hosts["ok.data.test"] = [hostIp];
    hosts["other.test"] = [hostIp];
    hosts["loop.test"] = ["127.0.0.1"];
    hosts["bridge.test"] = [bridgeIp];
    // A second sandbox, network: true (its own network), serving HTTP: the neighbour nobody may reach.
    peer = await start(`nettest-peer-${stamp}`, { network: true });
    void peer.exec(["python3", "/task/probe.py", "serve", "8080"], { timeoutMs: 300_000 });
    // network: true: the sandbox joins a holder container's namespace on the run's own network.
    const pinfo = await docker.getContainer(`${containerName(peer.spec.runId)}-net`).inspect();
    peerIp = Object.values(pinfo.NetworkSettings.Networks)[0]?.IPAddress ?? "";
    hosts["peer.test"] = [peerIp];
    sb = await start(`nettest-${stamp}`, {
      networkRules: {
        allow: [
          "data.test:8000",
          "*.data.test:8000",
          "data.test:8443",
          "loop.test:8000",
          "bridge.test:8000",
          "peer.test:8080",
        ],
        deny: ["alias.data.test"],
        allowedPrivateRanges: [SUBNET],
      },
    });
  }, 180_000);

  afterAll(async () => {
    for (const s of started) await s.stop().catch(() => undefined);
    await net?.remove();
  }, 60_000);

  const last = (host: string) => records.findLast((r) => r.host === host);

  it("reaches an allowed host over HTTP and over HTTPS (CONNECT), on the record", async () => {
    expect(await probe(sb, "fetch", "http://data.test:8000/hello")).toBe(
      "OK hello from data.test:8000/hello",
    );
    expect(await probe(sb, "fetch", "https://data.test:8443/secure")).toBe(
      "OK hello from data.test:8443/secure",
    );
    expect(records.find((r) => r.host === "data.test" && r.kind === "http")).toMatchObject({
      allowed: true,
      port: 8000,
      address: hostIp,
      rule: "allow data.test:8000",
    });
    const tls = records.find((r) => r.host === "data.test" && r.kind === "connect");
    expect(tls).toMatchObject({ allowed: true, port: 8443, rule: "allow data.test:8443" });
    expect(tls?.bytesIn).toBeGreaterThan(0);
  });

  it("refuses a host not on the list, with a reason, on the record", async () => {
    const out = await probe(sb, "fetch", "http://other.test:8000/");
    expect(out).toMatch(
      /^NO 403 scifi network proxy: refused other.test:8000: other.test:8000 is not on this task's network list/,
    );
    expect(last("other.test")).toMatchObject({ allowed: false, rule: "not-listed" });
  });

  it("refuses a denied name under an allowed wildcard (deny wins)", async () => {
    expect(await probe(sb, "fetch", "http://alias.data.test:8000/")).toMatch(/^NO 403 .*denied by the site/);
    expect(last("alias.data.test")).toMatchObject({ allowed: false, rule: "deny alias.data.test" });
  });

  it("refuses a raw IP", async () => {
    expect(await probe(sb, "fetch", `http://${hostIp}:8000/`)).toMatch(
      /^NO 403 .*is an address, not a host on the list/,
    );
    expect(last(hostIp)).toMatchObject({ allowed: false, rule: "raw-ip" });
  });

  it("refuses a zone id under an allowed wildcard and an escape past a deny rule (strict names)", async () => {
    const send = (request: string) =>
      probe(sb, "unix", "/run/scifi-net/proxy.sock", `${request}\\r\\n\\r\\n`);
    // Control: the same wildcard, a plain name, reached.
    expect(await probe(sb, "fetch", "http://ok.data.test:8000/ctl")).toBe(
      "OK hello from ok.data.test:8000/ctl",
    );
    for (const target of [
      `[::ffff:${hostIp}%x.data.test]:8000`,
      "\\alias.data.test:8000",
      "%61lias.data.test:8000",
    ]) {
      const out = await send(`CONNECT ${target} HTTP/1.1`);
      expect(out, target).toMatch(/^NO HTTP\/1.1 403/);
      expect(out, target).toContain("X-Scifi-Refused: bad-host");
    }
    expect(records.filter((r) => r.rule === "bad-host").length).toBeGreaterThanOrEqual(3);
    expect(records.some((r) => r.allowed && r.address === hostIp && r.host.includes("%"))).toBe(false);
  });

  it("refuses names that resolve to 127.0.0.1 or to the host's bridge address", async () => {
    expect(await probe(sb, "fetch", "http://loop.test:8000/")).toMatch(/^NO 403 .*resolves to 127.0.0.1/);
    expect(last("loop.test")).toMatchObject({ allowed: false, rule: "private-address" });
    expect(await probe(sb, "fetch", "http://bridge.test:8000/")).toMatch(
      new RegExp(`^NO 403 .*resolves to ${bridgeIp.replaceAll(".", "\\.")}`),
    );
    expect(last("bridge.test")).toMatchObject({ allowed: false, rule: "private-address" });
  });

  it("refuses another sandbox's address, by name and by IP, through the proxy and directly", async () => {
    expect(await probe(sb, "fetch", "http://peer.test:8080/")).toMatch(/^NO 403 .*private/);
    expect(last("peer.test")).toMatchObject({ allowed: false, rule: "private-address" });
    expect(await probe(sb, "fetch", `http://${peerIp}:8080/`)).toMatch(/^NO 403/);
    expect(await probe(sb, "direct", peerIp, "8080")).toMatch(
      /^NO scifi network proxy: a direct connection to .* is refused/,
    );
  });

  it("has no other way out: direct connections, DNS, and proxy-variable bypasses", async () => {
    // Ignoring the proxy variables: no route to the test host, the bridge or the outside.
    for (const [h, p] of [
      [hostIp, "8000"],
      [bridgeIp, "8000"],
      ["1.1.1.1", "443"],
    ] as const)
      expect(await probe(sb, "direct", h, p), h).toMatch(/^NO /);
    expect(await probe(sb, "fetch-noproxy", `http://${hostIp}:8000/`)).toMatch(/^NO /);
    // DNS: no name resolves in the sandbox (the proxy does the lookups), no resolver answers.
    expect(await probe(sb, "resolve", "other.test")).toMatch(/^NO /);
    expect(await probe(sb, "resolve", "data.test")).toMatch(/^NO /);
    for (const server of ["127.0.0.11", bridgeIp, "1.1.1.1"])
      expect(await probe(sb, "dns", server, "secret.other.test"), server).toMatch(/^NO /);
    // Proxy variables pointed elsewhere (the test host as a proxy): nothing to reach.
    expect(await probe(sb, "fetch-via", `http://${hostIp}:8000`, "http://other.test:8000/")).toMatch(/^NO /);
    // Talking to the proxy's socket itself: the same rules.
    const viaSocket = await probe(
      sb,
      "unix",
      "/run/scifi-net/proxy.sock",
      "GET http://other.test:8000/ HTTP/1.1\\r\\nHost: other.test\\r\\nConnection: close\\r\\n\\r\\n",
    );
    expect(viaSocket).toMatch(/^NO HTTP\/1.1 403/);
    const env = await sb.exec([
      "sh",
      "-c",
      "echo $HTTPS_PROXY; cat /etc/resolv.conf 2>/dev/null; ls /sys/class/net",
    ]);
    expect(env.stdout).toContain("http://127.0.0.1:3128");
    expect(env.stdout.trim().split("\n").at(-1)).toBe("lo");
    // Every attempt outside the proxy is on the record (the capture), with a readable reason.
    for (const [h, p] of [
      [hostIp, 8000],
      [bridgeIp, 8000],
      ["1.1.1.1", 443],
    ] as const)
      expect(
        records.find((r) => r.kind === "direct" && r.host === h && r.port === p),
        h,
      ).toMatchObject({
        allowed: false,
        rule: "capture-direct",
        reason: expect.stringContaining("only through the proxy"),
      });
    for (const name of ["other.test", "data.test", "secret.other.test"])
      expect(
        records.find((r) => r.kind === "dns" && r.host === name),
        name,
      ).toMatchObject({
        allowed: false,
        rule: "capture-dns",
      });
    expect(records.some((r) => r.rule === "capture-off")).toBe(false);
  });

  it("the capture answers a direct HTTP request with the refusal's reason, and the sandbox cannot undo it", async () => {
    expect(await probe(sb, "fetch-noproxy", `http://${hostIp}:8000/`)).toMatch(
      /^NO 403 scifi network proxy: a direct connection to .*:8000 is refused: the sandbox reaches the network only through the proxy/,
    );
    // No capability to change the namespace's routes or rules, as the sandbox's uid or any other.
    const undo = await sb.exec([
      "sh",
      "-c",
      "iptables -t nat -F OUTPUT 2>&1; ip route del local 0.0.0.0/0 dev lo table local 2>&1; echo done",
    ]);
    expect(undo.stdout).toMatch(/Permission denied|not permitted/i);
    expect(await probe(sb, "direct", hostIp, "8000")).toMatch(/^NO scifi network proxy: a direct connection/);
  });

  it("network: true is a network of the run's own: it cannot reach another sandbox, this host or the LAN", async () => {
    const other = await start(`nettest-open-${stamp}`, { network: true });
    const name = containerName(other.spec.runId);
    const holder = await docker.getContainer(`${name}-net`).inspect();
    expect(Object.keys(holder.NetworkSettings.Networks)).toEqual([name]);
    const gateway = holder.NetworkSettings.Networks[name]?.Gateway ?? "";
    expect(gateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const info = await docker.getContainer(name).inspect();
    expect(info.HostConfig.NetworkMode).toBe(`container:${holder.Id}`);
    expect(info.HostConfig.CapAdd ?? []).toEqual([]);
    expect(await probe(other, "direct", peerIp, "8080")).toMatch(/^NO /);
    // This host's own addresses: a server on the host, on every interface, is refused...
    const server = createServer((c) => c.end("host service\n"));
    await new Promise<void>((r) => server.listen(0, "0.0.0.0", () => r()));
    const port = (server.address() as AddressInfo).port;
    try {
      for (const address of [gateway, bridgeIp])
        expect(await probe(other, "direct", address, String(port)), address).toMatch(/^NO .*refused/i);
      // ... unless the site lists the range (the control: the same path, only the filter differs).
      const allowed = await start(`nettest-open-lan-${stamp}`, {
        network: true,
        openNetwork: {
          rules: { allow: ["*"], deny: [], allowedPrivateRanges: [`${gateway}/32`] },
          apptainerHostNetwork: false,
        },
      });
      expect(await probe(allowed, "direct", gateway, String(port))).toBe("OK connected");
      expect(await probe(allowed, "direct", bridgeIp, String(port))).toMatch(/^NO .*refused/i);
      // The sandbox cannot lift the filter.
      const undo = await allowed.exec(["sh", "-c", "iptables -F OUTPUT 2>&1; echo done"]);
      expect(undo.stdout).toMatch(/Permission denied|not permitted/i);
      expect(await probe(other, "direct", gateway, String(port))).toMatch(/^NO /);
    } finally {
      server.close();
    }
    // Control: the peer does serve (from inside itself).
    expect(await probe(peer, "fetch-noproxy", "http://127.0.0.1:8080/")).toBe(
      "OK hello from the peer sandbox",
    );
  });

  it("network: true: Docker's embedded resolver asks its upstream from the sandbox's namespace, so the filter judges it", async () => {
    // The upstream is this host's resolver (dockerd forwards what 127.0.0.11 cannot answer to the
    // nameservers of /etc/resolv.conf, dialling inside the sandbox's namespace). Here it is a
    // private address: the sandbox's queries must not reach it unless the site lists it.
    const upstreams = readFileSync("/etc/resolv.conf", "utf8")
      .split("\n")
      .map((l) => /^nameserver\s+(\S+)/.exec(l)?.[1])
      .filter((a): a is string => a !== undefined && isIP(a) === 4);
    const blocked = new BlockList();
    for (const [a, p, t] of SPECIAL_RANGES) blocked.addSubnet(a, p, t);
    const inRange = upstreams.filter((a) => blocked.check(a, "ipv4"));
    const other = await start(`nettest-dns-${stamp}`, { network: true });
    const answered = /^(OK answered|NO answered rcode)/;
    if (inRange.length === 0) {
      // A public upstream: the filter lets it through, as any public address.
      expect(await probe(other, "dns", "127.0.0.11", "deb.debian.org")).toMatch(answered);
      expect(await probe(other, "resolve", containerName(peer.spec.runId))).toMatch(/^NO /);
      return;
    }
    // The private upstream is refused directly and through 127.0.0.11 alike ...
    for (const a of inRange)
      expect(await probe(other, "dns", a, "deb.debian.org")).toMatch(/^NO (?!answered)/);
    expect(await probe(other, "dns", "127.0.0.11", "deb.debian.org")).toMatch(/^NO (?!answered)/);
    // ... and reached through 127.0.0.11 once the site lists it (the control: only the filter differs).
    const listed = await start(`nettest-dns-ok-${stamp}`, {
      network: true,
      openNetwork: {
        rules: { allow: ["*"], deny: [], allowedPrivateRanges: inRange.map((a) => `${a}/32`) },
        apptainerHostNetwork: false,
      },
    });
    expect(await probe(listed, "dns", "127.0.0.11", "deb.debian.org")).toMatch(answered);
    // It knows the run's own names only: the peer sandbox (another run's network) has none here.
    expect(await probe(listed, "resolve", containerName(peer.spec.runId))).toMatch(/^NO /);
  });

  it.skipIf(process.getuid?.() !== 0)(
    "network: true: an address this host gets after the sandbox started is refused too",
    async () => {
      const other = await start(`nettest-late-${stamp}`, { network: true });
      const listed = await start(`nettest-late-ok-${stamp}`, {
        network: true,
        openNetwork: {
          rules: { allow: ["*"], deny: [], allowedPrivateRanges: [`${LATE}/32`] },
          apptainerHostNetwork: false,
        },
      });
      const server = createServer((c) => c.on("error", () => undefined).end("host service\n"));
      await new Promise<void>((r) => server.listen(0, "0.0.0.0", () => r()));
      const port = String((server.address() as AddressInfo).port);
      // This host's new address: a veth pair of this test's own, on one end an address outside every
      // special range (the documentation ranges are refused anyway, so they would not show the poll).
      // It is local to this host: nothing leaves the machine.
      const link = `scifi-l${process.pid % 100000}`;
      execFileSync("ip", ["link", "add", `${link}a`, "type", "veth", "peer", "name", `${link}b`]);
      try {
        // A root runner refuses this host per packet on the host's side (INPUT, by the run's bridge):
        // the new address is never reachable. (A non-root runner has only the in-namespace poll,
        // about a second: docs/sandbox.md.) Measured from inside: how long it is reachable.
        const watch = other.exec(
          [
            "python3",
            "-c",
            `import socket,time
t0=time.time(); first=None; last=None
while time.time()-t0 < 8:
    s=socket.socket(); s.settimeout(0.2)
    try:
        s.connect(("${LATE}", ${port})); last=time.time()
        if first is None: first=last
    except OSError: pass
    s.close(); time.sleep(0.02)
print("window", round((last-first)*1000) if first else 0)`,
          ],
          { timeoutMs: 30_000 },
        );
        await new Promise((r) => setTimeout(r, 300));
        execFileSync("ip", ["addr", "add", `${LATE}/32`, "dev", `${link}a`]);
        execFileSync("ip", ["link", "set", `${link}a`, "up"]);
        const window = Number(/window (\d+)/.exec((await watch).stdout)?.[1] ?? Number.NaN);
        console.log(`network: true: a new host address was reachable for ${window} ms`);
        expect(window).toBe(0);
        expect(await probe(other, "direct", LATE, port)).toMatch(/^NO .*refused/i);
        // The control: the site lists it; the same path reaches the host's service.
        expect(await probe(listed, "direct", LATE, port)).toBe("OK connected");
      } finally {
        execFileSync("ip", ["link", "del", `${link}a`]);
        server.close();
      }
    },
  );

  it("prune removes a run's network whose owner is dead", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-nettest-home-"));
    const name = `scifi-nettest-orphan-${stamp}`;
    await docker.createNetwork({
      Name: name,
      Labels: {
        scifi: "1",
        "scifi.run": name,
        "scifi.host": hostname(),
        "scifi.pid": "2147483646",
        "scifi.home": homeKey(home),
      },
    });
    const removed = await backend.prune({ home });
    expect(removed).toContain(`network ${name} (run ${name})`);
    await expect(docker.getNetwork(name).inspect()).rejects.toThrow();
  });

  it("the forwarder and the run's network go with the sandbox", async () => {
    const other = await start(`nettest-gone-${stamp}`, { network: true });
    const name = containerName(other.spec.runId);
    const inputRules = () => execFileSync("iptables", ["-w", "5", "-S", "INPUT"], { encoding: "utf8" });
    // A root runner refuses the run's bridge in this host's INPUT chain while the sandbox lives.
    if (process.getuid?.() === 0) expect(inputRules()).toContain(`-i ${bridgeName(name)} -j REJECT`);
    await other.stop();
    await expect(docker.getNetwork(name).inspect()).rejects.toThrow();
    if (process.getuid?.() === 0) expect(inputRules()).not.toContain(bridgeName(name));
    await sb.stop();
    await expect(docker.getContainer(`${containerName(sb.spec.runId)}-net`).inspect()).rejects.toThrow();
  });
});
