// Found by an attacker (round 32): answers the proxy (and the network: true egress filter's list) must refuse as
// special but takes as public. docs/sandbox.md: "if any answer is in a private, loopback,
// link-local, CGNAT, multicast or reserved range (IPv4 and IPv6, mapped addresses included), it is
// refused unless the site lists the range". Each address below is in a block of IANA's IPv6
// special-purpose registry that is not globally reachable, or embeds 127.0.0.1 the way
// 64:ff9b::7f00:1 (refused today) does. A name resolving to one of them is let through today.
import { describe, expect, it } from "vitest";
import { Rules } from "../../runner/network/rules.ts";

const SPECIAL: [string, string][] = [
  ["2001:db8::5", "documentation 2001:db8::/32 (RFC 3849)"],
  ["3fff::5", "documentation 3fff::/20 (RFC 9637)"],
  ["100::5", "discard-only 100::/64 (RFC 6666)"],
  ["2001:2::5", "benchmarking 2001:2::/48 (RFC 5180)"],
  ["64:ff9b:1::7f00:1", "local-use IPv4/IPv6 translation 64:ff9b:1::/48 (RFC 8215), embedding 127.0.0.1"],
  ["fec0::5", "site-local fec0::/10 (deprecated, RFC 3879)"],
  ["::127.0.0.1", "IPv4-compatible ::/96 (deprecated), embedding 127.0.0.1"],
  ["::ffff:0:127.0.0.1", "IPv4-translated ::ffff:0:0/96 (RFC 2765), embedding 127.0.0.1"],
  ["2002:7f00:1::1", "6to4 of 127.0.0.1 (2002::/16 embeds an IPv4 address)"],
];

describe("A32-4 special IPv6 answers are refused unless the site lists the range", () => {
  const rules = new Rules({ allow: [], deny: [], allowedPrivateRanges: [] });
  it("the control: NAT64's well-known prefix embedding 127.0.0.1 and a mapped loopback are refused", () => {
    expect(rules.addressAllowed("64:ff9b::7f00:1")).toBe(false);
    expect(rules.addressAllowed("::ffff:127.0.0.1")).toBe(false);
  });
  for (const [address, why] of SPECIAL)
    it(`A32-4 ${address}: ${why}`, () => {
      expect(rules.addressAllowed(address), `${address} (${why}) is taken as public`).toBe(false);
    });
});
