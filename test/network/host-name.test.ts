// The one host-name grammar (runner/sam/host-name.ts) and the proxy deciding on its canonical
// form: zone ids, escapes, percent-encoding, userinfo, numeric names a resolver reads as addresses,
// brackets around names, bytes outside ASCII on the wire, 60 KB names. Each attack is sent to a
// real proxy on loopback, with a wildcard rule and a deny rule it tries to get around, next to a
// control request that the same rules allow.
import { type AddressInfo, connect, createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConnectionRecord } from "../../runner/memory/history-events.ts";
import { NetworkProxy } from "../../runner/network/proxy.ts";
import { Rules } from "../../runner/network/rules.ts";
import { parseAuthority, parseHost, parseHostRule } from "../../runner/sam/host-name.ts";

describe("the host-name grammar", () => {
  it("takes LDH names, dotted-quad IPv4 and bracketed IPv6, in one canonical form", () => {
    expect(parseHost("Data.Example.ORG.")).toEqual({
      ok: true,
      value: { kind: "name", name: "data.example.org" },
    });
    expect(parseHost("203.0.113.10")).toEqual({
      ok: true,
      value: { kind: "ip", address: "203.0.113.10", family: 4 },
    });
    expect(parseHost("[2001:DB8:0:0::1]")).toEqual({
      ok: true,
      value: { kind: "ip", address: "2001:db8::1", family: 6 },
    });
    expect(parseAuthority("[::ffff:203.0.113.10]:80")).toMatchObject({
      ok: true,
      value: { host: { kind: "ip", address: "::ffff:cb00:710a" }, port: 80 },
    });
    expect(parseHost("xn--bcher-kva.example")).toMatchObject({ ok: true });
  });

  it.each([
    ["a zone id", "[::ffff:203.0.113.10%x.w.example]"],
    ["a bare zone id", "fe80::1%eth0"],
    ["a backslash escape", "\\deny.w.example"],
    ["a percent escape", "%64eny.w.example"],
    ["userinfo", "user@x.w.example"],
    ["an underscore", "a_b.w.example"],
    ["a name in brackets", "[x.w.example]"],
    ["an unclosed bracket", "[::1"],
    ["a decimal address", "2130706433"],
    ["a short address", "127.1"],
    ["a hex address", "0x7f.1"],
    ["an octal quad", "0177.0.0.1"],
    ["a numeric last label", "a.w.example.123"],
    ["UTF-8 bytes read as latin1", "b\u00c3\u00bccher.example"],
    ["an empty label", "a..w.example"],
    ["a leading hyphen", "-a.w.example"],
    ["a label of 64", `${"a".repeat(64)}.example`],
    ["254 characters", `${"a.".repeat(126)}ab`],
    ["a 60 KB name", `${"a".repeat(60)}.`.repeat(1000)],
    ["invalid punycode", "xn--zz.example"],
    ["a space", "a b.example"],
    ["empty", ""],
  ])("refuses %s", (_what, text) => {
    const r = parseHost(text);
    expect(r.ok, text.slice(0, 60)).toBe(false);
    if (!r.ok) expect(r.why.length).toBeLessThan(400);
  });

  it("rules: Unicode labels become A-labels, IPv6 needs brackets, a wildcard needs a name", () => {
    expect(parseHostRule("Bücher.Example:8443")).toMatchObject({
      text: "xn--bcher-kva.example:8443",
      host: "xn--bcher-kva.example",
    });
    expect(parseHostRule("[2001:db8::1]:443")).toMatchObject({ text: "[2001:db8::1]:443", ip: 6 });
    expect(parseHostRule("203.0.113.10")).toMatchObject({ text: "203.0.113.10", ip: 4 });
    for (const bad of ["2001:db8::1", "*.203.0.113.10", "*.[::1]", "\\x.org", "x.org%eth0", "a@b.org"])
      expect(parseHostRule(bad), bad).toBeUndefined();
  });

  it("a name rule never matches an address, a deny rule on an address applies to what a name resolves to", () => {
    const r = new Rules({ allow: ["*.w.example:80"], deny: ["deny.w.example"], allowedPrivateRanges: [] });
    expect(r.check("[::ffff:203.0.113.10%x.w.example]", 80)).toMatchObject({
      allowed: false,
      rule: "bad-host",
    });
    expect(r.check("\\deny.w.example", 80)).toMatchObject({ allowed: false, rule: "bad-host" });
    expect(r.check("DENY.w.example.", 80)).toMatchObject({ allowed: false, rule: "deny deny.w.example" });
    expect(r.check("203.0.113.10", 80)).toMatchObject({ allowed: false, rule: "raw-ip" });
    expect(r.check("ok.w.example", 80)).toMatchObject({ allowed: true });
  });
});

describe("the proxy decides on the canonical name", () => {
  let upstream: Server;
  let upPort: number;
  let proxy: NetworkProxy;
  let port: number;
  const records: ConnectionRecord[] = [];

  const ask = (text: string) =>
    new Promise<string>((resolve, reject) => {
      const s = connect(port, "127.0.0.1");
      let out = "";
      s.on("data", (d) => {
        out += d;
        if (out.includes("\r\n\r\n") && !out.startsWith("HTTP/1.1 200")) s.end();
        if (out.startsWith("HTTP/1.1 200")) s.destroy();
      });
      s.on("error", reject);
      s.on("close", () => resolve(out));
      s.write(text);
    });

  beforeAll(async () => {
    upstream = createServer((s) => s.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.2", () => r()));
    upPort = (upstream.address() as AddressInfo).port;
    proxy = new NetworkProxy({
      rules: {
        allow: [`*.w.example:${upPort}`, `*.w.example:80`],
        deny: ["deny.w.example", "203.0.113.7"],
        allowedPrivateRanges: ["127.0.0.2/32"],
      },
      // The names a resolver would give: the denied one, a name pointing at a denied address, a fine one.
      hosts: {
        "deny.w.example": ["127.0.0.2"],
        "ok.w.example": ["127.0.0.2"],
        "alias.w.example": ["203.0.113.7"],
      },
      systemResolver: false,
      onRecord: (r) => records.push(r),
    });
    port = (await proxy.listen({ host: "127.0.0.1", port: 0 })) as number;
  });

  afterAll(async () => {
    await proxy.close();
    upstream.close();
  });

  it("control: an allowed name under the wildcard is reached, by CONNECT and by absolute URI", async () => {
    expect(await ask(`CONNECT ok.w.example:${upPort} HTTP/1.1\r\n\r\n`)).toMatch(/^HTTP\/1.1 200/);
    expect(await ask(`GET http://OK.w.example.:${upPort}/ HTTP/1.1\r\nHost: ok.w.example\r\n\r\n`)).toMatch(
      /^HTTP\/1.1 200/,
    );
    expect(records.at(-1)).toMatchObject({ allowed: true, host: "ok.w.example" });
  });

  it.each([
    [
      "a zone id under a wildcard",
      "CONNECT [::ffff:127.0.0.2%x.w.example]:PORT HTTP/1.1\r\n\r\n",
      "bad-host",
    ],
    ["a zone id, raw address", "CONNECT [::ffff:7f00:2%25x.w.example]:PORT HTTP/1.1\r\n\r\n", "bad-host"],
    ["a backslash past the deny rule", "CONNECT \\deny.w.example:PORT HTTP/1.1\r\n\r\n", "bad-host"],
    [
      "a trailing dot and case on the denied name",
      "CONNECT DENY.w.example.:PORT HTTP/1.1\r\n\r\n",
      "deny deny.w.example",
    ],
    ["a percent escape in an absolute URI", "GET http://%64eny.w.example:PORT/ HTTP/1.1\r\n\r\n", "bad-host"],
    ["a backslash in an absolute URI", "GET http://\\deny.w.example:PORT/ HTTP/1.1\r\n\r\n", "bad-host"],
    [
      "userinfo in an absolute URI",
      "GET http://ok.w.example@deny.w.example:PORT/ HTTP/1.1\r\n\r\n",
      "bad-host",
    ],
    ["a decimal address", "GET http://2130706434:PORT/ HTTP/1.1\r\n\r\n", "bad-host"],
    [
      "a malformed Host header",
      "GET http://ok.w.example:PORT/ HTTP/1.1\r\nHost: \\deny.w.example\r\n\r\n",
      "bad-host",
    ],
    ["UTF-8 on the wire", "CONNECT d\u00c3\u00a9ny.w.example:PORT HTTP/1.1\r\n\r\n", "bad-host"],
    [
      "a name resolving to a denied address",
      "CONNECT alias.w.example:80 HTTP/1.1\r\n\r\n",
      "deny 203.0.113.7",
    ],
    ["a lowercase method", "connect ok.w.example:PORT HTTP/1.1\r\n\r\n", "bad-request"],
  ])("refuses %s", async (_what, request, rule) => {
    const out = await ask(request.replaceAll("PORT", String(upPort)));
    expect(out).toMatch(/^HTTP\/1.1 403/);
    expect(out).toContain(`X-Scifi-Refused: ${rule}`);
    expect(records.at(-1)).toMatchObject({ allowed: false, rule });
  });
});
