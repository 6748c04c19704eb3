// Network by host allowlist on Apptainer, INSIDE the harness as the non-root user: the instance has
// only loopback (--network none); the run's proxy is reached through its socket by a forwarder on
// 127.0.0.1:3128 inside. Test hosts are servers this test starts in the harness, named through the
// proxy's own resolver configuration. Probes use bash's /dev/tcp (the test image has no curl).
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConnectionRecord } from "../../../runner/memory/history-events.ts";
import { createApptainerBackend } from "../../../runner/sandbox/apptainer.ts";
import type { Sandbox } from "../../../runner/sandbox/types.ts";
import { taskSpec } from "./fixtures.ts";

const records: ConnectionRecord[] = [];
const hosts: Record<string, string[]> = {};
const backend = createApptainerBackend({
  proxy: { hosts, systemResolver: false, onRecord: (r) => records.push(r) },
});
const web = createHttpServer((req, res) => res.end(`hello from ${req.headers.host}${req.url}`));
let port = 0;
let sb: Sandbox;
const ownAddress =
  Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === "IPv4" && !i.internal)?.address ?? "";

/** Sends `request` to host:port from inside the sandbox with bash, prints what comes back. */
async function tcp(host: string, p: number, request: string, box: Sandbox = sb): Promise<string> {
  const r = await box.exec(
    [
      "bash",
      "-c",
      `exec 3<>/dev/tcp/${host}/${p} || { echo NOCONNECT; exit 0; }; printf "$1" >&3; timeout 5 cat <&3`,
      "x",
      request,
    ],
    { timeoutMs: 20_000 },
  );
  return `${r.stdout}${r.stderr}`;
}

const get = (url: string, host: string, box: Sandbox = sb) =>
  tcp("127.0.0.1", 3128, `GET ${url} HTTP/1.1\\r\\nHost: ${host}\\r\\nConnection: close\\r\\n\\r\\n`, box);

describe("network by host allowlist (apptainer, inside the harness)", { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await new Promise<void>((r) => web.listen(0, "0.0.0.0", () => r()));
    port = (web.address() as AddressInfo).port;
    hosts["data.test"] = ["127.0.0.2"];
    hosts["other.test"] = ["127.0.0.2"];
    hosts["loop.test"] = ["127.0.0.1"];
    hosts["own.test"] = [ownAddress];
    hosts["deny.w.test"] = ["127.0.0.2"];
    hosts["ok.w.test"] = ["127.0.0.2"];
    sb = await backend.start(
      await taskSpec({
        // Node (the socket probe) reserves gigabytes of address space; the exec limits it (ulimit -v).
        memoryBytes: 16 * 1024 ** 3,
        networkRules: {
          allow: [`data.test:${port}`, `loop.test:${port}`, `own.test:${port}`, `*.w.test:${port}`],
          deny: ["deny.w.test"],
          allowedPrivateRanges: ["127.0.0.2/32"],
        },
      }),
    );
  });

  afterAll(async () => {
    await sb?.stop();
  });

  it("reaches an allowed host over HTTP and through CONNECT, on the record", async () => {
    expect(await get(`http://data.test:${port}/hello`, "data.test")).toContain(
      `hello from data.test:${port}/hello`,
    );
    const tunnel = await tcp(
      "127.0.0.1",
      3128,
      `CONNECT data.test:${port} HTTP/1.1\\r\\n\\r\\nGET /inside HTTP/1.1\\r\\nHost: data.test\\r\\nConnection: close\\r\\n\\r\\n`,
    );
    expect(tunnel).toContain("200 Connection Established");
    expect(tunnel).toContain("hello from data.test/inside");
    expect(records.find((r) => r.host === "data.test" && r.kind === "connect")).toMatchObject({
      allowed: true,
    });
    expect(records.find((r) => r.host === "data.test" && r.kind === "http")).toMatchObject({ allowed: true });
  });

  it("refuses a host not on the list, a raw IP, and names resolving to 127.0.0.1 or the harness's address", async () => {
    expect(await get(`http://other.test:${port}/`, "other.test")).toMatch(
      /403 Forbidden[\s\S]*not on this task's network list/,
    );
    expect(await get(`http://127.0.0.2:${port}/`, "x")).toMatch(/403[\s\S]*is an address/);
    expect(await get(`http://loop.test:${port}/`, "x")).toMatch(/403[\s\S]*resolves to 127.0.0.1/);
    expect(await get(`http://own.test:${port}/`, "x")).toMatch(/403[\s\S]*private/);
    for (const [host, rule] of [
      ["other.test", "not-listed"],
      ["127.0.0.2", "raw-ip"],
      ["loop.test", "private-address"],
      ["own.test", "private-address"],
    ])
      expect(
        records.findLast((r) => r.host === host),
        host,
      ).toMatchObject({ allowed: false, rule });
  });

  it("strict names: a zone id under a wildcard and an escape past a deny rule are refused", async () => {
    // Control: a plain name under the same wildcard is reached.
    expect(await get(`http://ok.w.test:${port}/ctl`, "ok.w.test")).toContain(
      `hello from ok.w.test:${port}/ctl`,
    );
    // printf reads the request as its format: a doubled % or backslash is sent as one.
    for (const target of [`[::ffff:127.0.0.2%%x.w.test]:${port}`, `\\\\deny.w.test:${port}`]) {
      const out = await tcp("127.0.0.1", 3128, `CONNECT ${target} HTTP/1.1\\r\\n\\r\\n`);
      expect(out, target).toMatch(/^HTTP\/1.1 403/);
      expect(out, target).toContain("X-Scifi-Refused: bad-host");
    }
    const refused = records.filter((r) => r.rule === "bad-host").map((r) => r.reason ?? "");
    expect(refused.some((r) => r.includes("127.0.0.2%x.w.test"))).toBe(true);
    expect(refused.some((r) => r.includes("\\\\deny.w.test"))).toBe(true);
  });

  it("2,000 unfinished heads to the proxy's socket: closed past the cap, one flood record", async () => {
    const flood = await sb.exec(
      [
        "/run/scifi-node",
        "-e",
        `const net=require("net");let closed=0;const all=[];for(let i=0;i<2000;i++){const c=net.connect("/run/scifi-net/proxy.sock");c.on("error",()=>{});c.on("close",()=>closed++);c.write("GET http://ok.w.test/ HTTP/1.1\\r\\nX: ");all.push(c)}setTimeout(()=>{console.log(closed);for(const c of all)c.destroy()},3000)`,
      ],
      { timeoutMs: 60_000 },
    );
    expect(Number(flood.stdout.trim()), flood.stderr).toBeGreaterThanOrEqual(2000 - 128);
    expect(records.filter((r) => r.rule === "flood")).toHaveLength(1);
    // Within its caps again once the flood is gone: the next request is served.
    expect(await get(`http://data.test:${port}/after`, "data.test")).toContain("hello from data.test");
  });

  it("has no other way out: direct connections, DNS, the socket itself", async () => {
    for (const address of ["127.0.0.2", ownAddress])
      expect(await tcp(address, port, "GET / HTTP/1.0\\r\\n\\r\\n"), address).not.toContain("hello from");
    const dns = await sb.exec("getent hosts data.test || echo no-dns", { timeoutMs: 15_000 });
    expect(dns.stdout).toContain("no-dns");
    const net = await sb.exec("tail -n +3 /proc/net/dev | cut -d: -f1", {
      timeoutMs: 15_000,
    });
    expect(
      net.stdout
        .split(/\s+/)
        .filter(Boolean)
        .every((i) => i === "lo"),
    ).toBe(true);
    const socket = await sb.exec(
      [
        "/run/scifi-node",
        "-e",
        `const c=require("net").connect("/run/scifi-net/proxy.sock");c.on("data",d=>process.stdout.write(d));c.write("GET http://other.test:${port}/ HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n")`,
      ],
      { timeoutMs: 15_000 },
    );
    expect(socket.stdout, socket.stderr).toMatch(/^HTTP\/1.1 403/);
    const env = await sb.exec(["sh", "-c", "echo $HTTP_PROXY $https_proxy"]);
    expect(env.stdout.trim()).toBe("http://127.0.0.1:3128 http://127.0.0.1:3128");
    // The minimal image has no python3 and no iptables: as closed, but the record says attempts
    // outside the proxy are not recorded in this sandbox (and why).
    expect(records.find((r) => r.rule === "capture-off")?.reason).toMatch(/not recorded in this sandbox/);
  });
});

// The scientific image has python3, ip and iptables: the capture is on, and `network: true` goes
// through the proxy (unprivileged Apptainer has no per-run network; never the harness's own).
describe("the capture and network: true (apptainer, scientific image)", { timeout: 300_000 }, () => {
  const image = "scifi-sci:local";
  let listed: Sandbox;
  let open: Sandbox;
  let openLan: Sandbox;

  beforeAll(async () => {
    if (!port) {
      await new Promise<void>((r) => web.listen(0, "0.0.0.0", () => r()));
      port = (web.address() as AddressInfo).port;
    }
    hosts["data.test"] = ["127.0.0.2"];
    hosts["any.test"] = ["127.0.0.2"];
    hosts["own.test"] = [ownAddress];
    hosts["deny.w.test"] = ["127.0.0.2"];
    hosts["ok.w.test"] = ["127.0.0.2"];
    listed = await backend.start(
      await taskSpec({
        image,
        memoryBytes: 16 * 1024 ** 3,
        networkRules: { allow: [`data.test:${port}`], deny: [], allowedPrivateRanges: ["127.0.0.2/32"] },
      }),
    );
    open = await backend.start(await taskSpec({ image, memoryBytes: 16 * 1024 ** 3, network: true }));
    openLan = await backend.start(
      await taskSpec({
        image,
        memoryBytes: 16 * 1024 ** 3,
        network: true,
        openNetwork: {
          rules: { allow: ["*"], deny: ["denied.test"], allowedPrivateRanges: ["127.0.0.2/32"] },
          apptainerHostNetwork: false,
        },
      }),
    );
  });

  afterAll(async () => {
    await listed?.stop();
    await open?.stop();
    await openLan?.stop();
    web.close();
  });

  it("records and refuses every connection, DNS query and datagram outside the proxy", async () => {
    const direct = await tcp(ownAddress, port, "GET / HTTP/1.0\\r\\n\\r\\n", listed);
    expect(direct).not.toContain("hello from");
    expect(direct).toMatch(
      /403 Forbidden[\s\S]*a direct connection to .*:\d+ is refused: the sandbox reaches the network only through the proxy/,
    );
    expect(await tcp("1.1.1.1", 443, "x", listed)).toMatch(/403 Forbidden/);
    const dns = await listed.exec(
      [
        "python3",
        "-c",
        "import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.settimeout(5);" +
          "s.sendto(bytes.fromhex('123401000001000000000000')+b'\\x06secret\\x07example\\x00\\x00\\x01\\x00\\x01',('9.9.9.9',53));" +
          "a=s.recv(512);print('rcode',a[3]&15)",
      ],
      { timeoutMs: 20_000 },
    );
    expect(dns.stdout, dns.stderr).toContain("rcode 5");
    expect(
      records.find((r) => r.kind === "direct" && r.host === ownAddress && r.port === port),
    ).toMatchObject({
      allowed: false,
      rule: "capture-direct",
    });
    expect(records.find((r) => r.kind === "direct" && r.host === "1.1.1.1" && r.port === 443)).toBeDefined();
    expect(records.find((r) => r.kind === "dns" && r.host === "secret.example")).toMatchObject({
      allowed: false,
      rule: "capture-dns",
    });
    // The sandbox cannot take the capture down (no capability in its namespace).
    const undo = await listed.exec(
      [
        "sh",
        "-c",
        "iptables -t nat -F OUTPUT 2>&1; ip route del local 0.0.0.0/0 dev lo table local 2>&1; echo done",
      ],
      {
        timeoutMs: 15_000,
      },
    );
    expect(undo.stdout).toMatch(/Permission denied|not permitted/i);
    expect(await tcp(ownAddress, port, "GET / HTTP/1.0\\r\\n\\r\\n", listed)).toMatch(/403 Forbidden/);
    // Still the proxy works for the listed host.
    expect(await get(`http://data.test:${port}/ok`, "data.test", listed)).toContain(
      `hello from data.test:${port}/ok`,
    );
  });

  it("network: true is not the harness's network: only loopback, the proxy to public hosts", async () => {
    const net = await open.exec("tail -n +3 /proc/net/dev | cut -d: -f1", { timeoutMs: 15_000 });
    expect(
      net.stdout
        .split(/\s+/)
        .filter(Boolean)
        .every((i) => i === "lo"),
    ).toBe(true);
    // The harness's own address and loopback names are refused, directly and through the proxy.
    expect(await tcp(ownAddress, port, "GET / HTTP/1.0\\r\\n\\r\\n", open)).not.toContain("hello from");
    expect(await get(`http://own.test:${port}/`, "own.test", open)).toMatch(/403[\s\S]*private/);
    expect(await get(`http://any.test:${port}/`, "any.test", open)).toMatch(/403[\s\S]*private/);
    // Control: the same request where the site lists the range reaches the server, any name and port.
    expect(await get(`http://any.test:${port}/lan`, "any.test", openLan)).toContain(
      `hello from any.test:${port}/lan`,
    );
    expect(await get(`http://denied.test:${port}/`, "denied.test", openLan)).toMatch(
      /403[\s\S]*denied by the site/,
    );
    expect(records.find((r) => r.host === "any.test" && r.allowed)).toMatchObject({
      rule: "allow * (network: true)",
    });
  });
});
