// The run's network proxy on the host: rules (exact, wildcard, port, deny wins), the proxy's own
// lookups with private answers refused unless the site lists the range, HTTP and CONNECT, a record
// of every connection, a readable reason on a refusal. Test hosts are servers this test starts,
// named through the proxy's own resolver configuration.
import { createServer, type Server } from "node:http";
import {
  type AddressInfo,
  connect,
  createServer as createTcpServer,
  type Server as TcpServer,
} from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConnectionRecord } from "../../runner/memory/history-events.ts";
import { MAX_CAPTURE_RECORDS, NetworkProxy } from "../../runner/network/proxy.ts";
import { Rules } from "../../runner/network/rules.ts";
import { parseHostRule } from "../../runner/sam/host-rules.ts";

let web: Server;
let webPort: number;
let tcp: TcpServer;
let tcpPort: number;
let proxy: NetworkProxy;
let proxyPort: number;
const records: ConnectionRecord[] = [];

/** Sends raw bytes to the proxy and returns everything it answers until it closes (or `until` matches). */
function raw(text: string, until?: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(proxyPort, "127.0.0.1");
    let out = "";
    s.on("data", (d) => {
      out += d.toString();
      if (until?.test(out)) {
        s.destroy();
        resolve(out);
      }
    });
    s.on("error", reject);
    s.on("close", () => resolve(out));
    s.write(text);
  });
}

beforeAll(async () => {
  // The servers listen on all of loopback: the names point at 127.0.0.2, a range the site lists here.
  web = createServer((req, res) => res.end(`hello from ${req.headers.host}${req.url}`));
  await new Promise<void>((r) => web.listen(0, "0.0.0.0", () => r()));
  webPort = (web.address() as AddressInfo).port;
  tcp = createTcpServer((s) => s.on("data", (d) => s.write(`echo:${d}`)));
  await new Promise<void>((r) => tcp.listen(0, "0.0.0.0", () => r()));
  tcpPort = (tcp.address() as AddressInfo).port;
  proxy = new NetworkProxy({
    rules: {
      allow: [
        `data.test:${webPort}`,
        `*.archive.test:${webPort}`,
        `tls.test:${tcpPort}`,
        `loop.test:${webPort}`,
        `blocked.archive.test:${webPort}`,
      ],
      deny: ["blocked.archive.test"],
      allowedPrivateRanges: ["127.0.0.2/32"],
    },
    hosts: {
      "data.test": ["127.0.0.2"],
      "a.archive.test": ["127.0.0.2"],
      "tls.test": ["127.0.0.2"],
      "loop.test": ["127.0.0.1"],
      "blocked.archive.test": ["127.0.0.2"],
    },
    systemResolver: false,
    onRecord: (r) => records.push(r),
  });
  proxyPort = (await proxy.listen({ host: "127.0.0.1", port: 0 })) as number;
});

afterAll(async () => {
  await proxy.close();
  web.close();
  tcp.close();
});

describe("host rules", () => {
  it("parses exact, wildcard and port forms and refuses others", () => {
    expect(parseHostRule("Data.Example.org")).toEqual({
      text: "data.example.org",
      host: "data.example.org",
      wildcard: false,
    });
    expect(parseHostRule("*.example.org:8443")).toMatchObject({
      host: "example.org",
      wildcard: true,
      port: 8443,
    });
    for (const bad of ["", "*", "a b", "http://x", "x:0", "x:70000", "*.*.x", "-x.org"])
      expect(parseHostRule(bad), bad).toBeUndefined();
  });

  it("deny wins; wildcard matches subdomains only; no port: allow 80 and 443, deny every port", () => {
    const r = new Rules({
      allow: ["*.ex.org", "ex.org", "x.ex.org:8080", "bad.ex.org:8080"],
      deny: ["bad.ex.org"],
      allowedPrivateRanges: [],
    });
    expect(r.check("a.ex.org", 443).allowed).toBe(true);
    expect(r.check("ex.org", 80).allowed).toBe(true);
    expect(r.check("ex.org", 22)).toMatchObject({ allowed: false, rule: "not-listed" });
    expect(r.check("x.ex.org", 8080).allowed).toBe(true);
    expect(r.check("notex.org", 443).allowed).toBe(false);
    expect(r.check("bad.ex.org", 443)).toMatchObject({ allowed: false, rule: "deny bad.ex.org" });
    expect(r.check("bad.ex.org", 8080)).toMatchObject({ allowed: false, rule: "deny bad.ex.org" });
    expect(r.check("1.2.3.4", 443)).toMatchObject({ allowed: false, rule: "raw-ip" });
  });

  it("refuses special answers unless the site lists the range", () => {
    const r = new Rules({ allow: [], deny: [], allowedPrivateRanges: ["10.1.0.0/16"] });
    for (const a of [
      "127.0.0.1",
      "10.0.0.1",
      "172.17.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "224.0.0.1",
      "::1",
      "fe80::1",
      "fd00::1",
      "::ffff:127.0.0.1",
      "0.0.0.0",
    ])
      expect(r.addressAllowed(a), a).toBe(false);
    expect(r.addressAllowed("10.1.2.3")).toBe(true);
    expect(r.addressAllowed("93.184.216.34")).toBe(true);
  });
});

describe("proxy", () => {
  it("forwards HTTP to an allowed host (exact and wildcard) and records it", async () => {
    const out = await raw(
      `GET http://data.test:${webPort}/x HTTP/1.1\r\nHost: data.test:${webPort}\r\nConnection: close\r\n\r\n`,
    );
    expect(out).toMatch(/^HTTP\/1.1 200/);
    expect(out).toContain(`hello from data.test:${webPort}/x`);
    const w = await raw(
      `GET http://a.archive.test:${webPort}/y HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`,
    );
    expect(w).toContain("hello from a.archive.test");
    const rec = records.find((r) => r.host === "data.test" && r.kind === "http");
    expect(rec).toMatchObject({
      allowed: true,
      port: webPort,
      address: "127.0.0.2",
      rule: `allow data.test:${webPort}`,
    });
    expect(rec?.bytesIn).toBeGreaterThan(0);
  });

  it("tunnels CONNECT to an allowed host and counts the bytes", async () => {
    const out = await raw(
      `CONNECT tls.test:${tcpPort} HTTP/1.1\r\nHost: tls.test:${tcpPort}\r\n\r\nping`,
      /echo:ping/,
    );
    expect(out).toMatch(/^HTTP\/1.1 200/);
    expect(out).toContain("echo:ping");
    await new Promise((r) => setTimeout(r, 100));
    const rec = records.find((r) => r.host === "tls.test");
    expect(rec).toMatchObject({ kind: "connect", allowed: true, bytesOut: 4, bytesIn: 9 });
  });

  it.each([
    ["a host not on the list", "GET http://other.test:8000/ HTTP/1.1\r\n\r\n", "not-listed", "other.test"],
    ["a raw IP", "CONNECT 127.0.0.2:443 HTTP/1.1\r\n\r\n", "raw-ip", "127.0.0.2"],
    ["a denied host under an allowed wildcard", "", "deny", "blocked.archive.test"],
    ["a listed name resolving to 127.0.0.1", "", "private-address", "loop.test"],
  ])("refuses %s with a reason, and records it", async (_what, request, rule, host) => {
    const text = request || `CONNECT ${host}:${webPort} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    const out = await raw(text);
    expect(out).toMatch(/^HTTP\/1.1 403/);
    expect(out).toContain(`scifi network proxy: refused ${host}`);
    expect(out.toLowerCase()).toContain(`x-scifi-refused: ${rule}`);
    const rec = records.findLast((r) => r.host === host);
    expect(rec).toMatchObject({ allowed: false });
    expect(rec?.rule.startsWith(rule)).toBe(true);
    expect(rec?.reason).toBeTruthy();
  });

  it("refuses non-http URLs and origin-form requests (the proxy is not a web server)", async () => {
    const out = await raw("GET /etc/passwd HTTP/1.1\r\nHost: data.test\r\nConnection: close\r\n\r\n");
    expect(out).toMatch(/^HTTP\/1.1 403/);
    const ftp = await raw("GET ftp://data.test/ HTTP/1.1\r\nConnection: close\r\n\r\n");
    expect(ftp).toMatch(/^HTTP\/1.1 403/);
  });

  it("an approved host is added for the rest of the run", async () => {
    const before = await raw(`CONNECT late.test:${tcpPort} HTTP/1.1\r\n\r\n`);
    expect(before).toMatch(/^HTTP\/1.1 403/);
    proxy.rules.addAllow(`late.test:${tcpPort}`);
    // late.test has no pinned answer and the system resolver is off: refused for lack of an address.
    const after = await raw(`CONNECT late.test:${tcpPort} HTTP/1.1\r\n\r\n`);
    expect(after).toContain("does not resolve");
  });
});

describe("`*` (network: true through the proxy)", () => {
  it("allows any host on any port, deny still wins, raw public addresses too", () => {
    const rules = new Rules({ allow: ["*"], deny: ["bad.example.org"], allowedPrivateRanges: [] });
    expect(rules.check("anything.example.com", 22)).toEqual({
      allowed: true,
      rule: "allow * (network: true)",
    });
    expect(rules.check("1.1.1.1", 443)).toMatchObject({ allowed: true });
    expect(rules.check("bad.example.org", 8080)).toMatchObject({
      allowed: false,
      rule: "deny bad.example.org",
    });
    // The address check stays: private answers are still refused.
    expect(rules.addressAllowed("10.1.2.3")).toBe(false);
    expect(rules.addressAllowed("8.8.8.8")).toBe(true);
  });
});

describe("capture records (what the sandbox tried outside the proxy)", () => {
  it("refuses and records a direct connection, a DNS query and a datagram, with a readable reason", async () => {
    const before = records.length;
    const direct = await raw("SCIFI-CAPTURE tcp 10.9.8.7 8080\r\n\r\n");
    expect(direct).toMatch(/^HTTP\/1.1 403 Forbidden/);
    expect(direct).toContain("X-Scifi-Refused: capture-direct");
    expect(direct).toContain(
      "a direct connection to 10.9.8.7:8080 is refused: the sandbox reaches the network only through the proxy",
    );
    await raw("SCIFI-CAPTURE dns secret.example.org 53\r\n\r\n");
    await raw("SCIFI-CAPTURE udp - 0\r\n\r\n");
    // A hostile line: the host is cleaned and the port bounded.
    await raw("SCIFI-CAPTURE tcp <script>x</script> 99999999\r\n\r\n");
    const got = records.slice(before);
    expect(got.map((r) => [r.kind, r.host, r.port, r.allowed, r.rule])).toEqual([
      ["direct", "10.9.8.7", 8080, false, "capture-direct"],
      ["dns", "secret.example.org", 53, false, "capture-dns"],
      ["udp", "-", 0, false, "capture-udp"],
      ["direct", "?script?x??script?", 65535, false, "capture-direct"],
    ]);
  });

  it("keeps at most MAX_CAPTURE_RECORDS, then one flood record", async () => {
    const flood: ConnectionRecord[] = [];
    const p = new NetworkProxy({
      rules: { allow: [], deny: [], allowedPrivateRanges: [] },
      onRecord: (r) => flood.push(r),
    });
    const port = (await p.listen({ host: "127.0.0.1", port: 0 })) as number;
    const send = () =>
      new Promise<void>((resolve) => {
        const s = connect(port, "127.0.0.1");
        s.on("data", () => undefined);
        s.on("close", () => resolve());
        s.on("error", () => resolve());
        s.write("SCIFI-CAPTURE tcp 1.2.3.4 80\r\n\r\n");
      });
    for (let i = 0; i < MAX_CAPTURE_RECORDS + 20; i += 20)
      await Promise.all(Array.from({ length: 20 }, send));
    await p.close();
    // The records, one flood record, and at the close one record counting the refusals left out.
    expect(flood.length).toBe(MAX_CAPTURE_RECORDS + 2);
    expect(flood.at(-2)).toMatchObject({ rule: "flood", allowed: false });
    expect(flood.at(-1)).toMatchObject({
      rule: "refusals-not-recorded",
      reason: expect.stringMatching(/^\d+ more refused connections/),
    });
  });
});
