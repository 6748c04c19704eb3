// The egress filter of `network: true` on Docker, as text: what it accepts and refuses in order.
// (test/network/docker.test.ts runs it in a real namespace, with a control where the site lists a range.)
import { describe, expect, it } from "vitest";
import { egressFilterScript, embeddedDnsReachesHost } from "../../runner/network/egress.ts";
import { bridgeName, hostInputRules } from "../../runner/sandbox/docker/host-input.ts";

describe("egressFilterScript", () => {
  const script = egressFilterScript(
    { allow: ["*"], deny: [], allowedPrivateRanges: ["10.20.0.0/16", "fd00::/8"] },
    ["192.0.2.10", "2001:db8::5", "$(reboot)"],
  );
  const lines = script.split("\n");
  const at = (needle: string) => lines.findIndex((l) => l.includes(needle));

  it("accepts loopback and the site's ranges before refusing the special ranges and the host's own", () => {
    expect(at("-o lo -j ACCEPT")).toBeGreaterThan(-1);
    expect(at("-d 10.20.0.0/16 -j ACCEPT")).toBeGreaterThan(at("-o lo -j ACCEPT"));
    for (const refused of [
      "10.0.0.0/8",
      "172.16.0.0/12",
      "192.168.0.0/16",
      "169.254.0.0/16",
      "100.64.0.0/10",
    ])
      expect(at(`$ipt -A OUTPUT -d ${refused} -j REJECT`), refused).toBeGreaterThan(
        at("-d 10.20.0.0/16 -j ACCEPT"),
      );
    expect(at("$ipt -A OUTPUT -d 192.0.2.10 -j REJECT")).toBeGreaterThan(-1);
    expect(at("$ip6 -A OUTPUT -d 2001:db8::5 -j REJECT")).toBeGreaterThan(-1);
    expect(at("$ip6 -A OUTPUT -d fd00::/8 -j ACCEPT")).toBeGreaterThan(-1);
    expect(script.trimEnd().endsWith("echo scifi-net filter on")).toBe(true);
  });

  it("never puts anything but address text into the script", () => {
    expect(script).not.toContain("reboot");
    expect(script.startsWith("set -e\n")).toBe(true);
  });
});

describe("Docker's embedded resolver", () => {
  it("is refused (before loopback is accepted) when dockerd would ask a resolver on this host's loopback", () => {
    expect(embeddedDnsReachesHost("nameserver 10.255.255.53\n")).toBe(false);
    expect(embeddedDnsReachesHost("# x\nnameserver 192.0.2.1\nnameserver 127.0.0.1\n")).toBe(true);
    expect(embeddedDnsReachesHost("nameserver ::1\n")).toBe(true);
    // systemd-resolved: dockerd asks its upstreams instead.
    expect(embeddedDnsReachesHost("nameserver 127.0.0.53\n", "nameserver 192.0.2.53\n")).toBe(false);
    expect(embeddedDnsReachesHost("nameserver 127.0.0.53\n")).toBe(true);
    const rules = { allow: ["*"], deny: [], allowedPrivateRanges: [] };
    const lines = egressFilterScript(rules, [], undefined, true).split("\n");
    const refuse = lines.indexOf("$ipt -A OUTPUT -d 127.0.0.11 -j REJECT");
    expect(refuse).toBeGreaterThan(-1);
    expect(refuse).toBeLessThan(lines.indexOf("$ipt -A OUTPUT -o lo -j ACCEPT"));
    expect(egressFilterScript(rules, [])).not.toContain("127.0.0.11");
  });
});

describe("the host-side refusal of a network: true bridge", () => {
  it("refuses the bridge, with the site's ranges accepted above it; only address text; a 15-character name", () => {
    const name = bridgeName("scifi-some-run-1234");
    expect(name).toMatch(/^sf-[0-9a-f]{12}$/);
    expect(bridgeName("scifi-some-run-1234")).toBe(name);
    const rules = hostInputRules(name, ["10.20.0.0/16", "fd00::/8", "$(reboot)"]);
    // Each is inserted at the top: the REJECT first, so the ACCEPTs end up above it.
    expect(rules.v4).toEqual([
      ["-i", name, "-j", "REJECT"],
      ["-i", name, "-d", "10.20.0.0/16", "-j", "ACCEPT"],
    ]);
    expect(rules.v6).toEqual([
      ["-i", name, "-j", "REJECT"],
      ["-i", name, "-d", "fd00::/8", "-j", "ACCEPT"],
    ]);
  });
});

describe("hostAddresses", () => {
  it("holds this host's addresses and the prefixes on its links, outside the special ranges", async () => {
    const { BlockList } = await import("node:net");
    const { networkInterfaces } = await import("node:os");
    const { hostAddresses } = await import("../../runner/network/egress.ts");
    const { SPECIAL_RANGES } = await import("../../runner/network/rules.ts");
    const special = new BlockList();
    for (const [net, prefix, type] of SPECIAL_RANGES) special.addSubnet(net, prefix, type);
    const got = hostAddresses();
    for (const a of Object.values(networkInterfaces()).flat()) {
      if (!a || a.internal || !a.cidr) continue;
      const type = a.family === "IPv4" ? "ipv4" : "ipv6";
      if (special.check(a.address, type)) continue;
      expect(got).toContain(a.address);
      const [net, prefix] = a.cidr.split("/");
      // The prefix is there as its network address (e.g. 192.0.2.0/24 for 192.0.2.2/24).
      expect(
        got.some((g) => {
          const [n, p] = g.split("/");
          if (p !== prefix || !n) return false;
          const one = new BlockList();
          one.addSubnet(n, Number(p), type);
          return one.check(net ?? "", type);
        }),
        a.cidr,
      ).toBe(true);
    }
    expect(got.some((g) => special.check(g.split("/")[0] ?? "", g.includes(":") ? "ipv6" : "ipv4"))).toBe(
      false,
    );
    expect(
      egressFilterScript({ allow: ["*"], deny: [], allowedPrivateRanges: [] }, ["203.0.113.0/24"]),
    ).toContain("$ipt -A OUTPUT -d 203.0.113.0/24 -j REJECT");
  });
});
