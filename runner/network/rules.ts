// The proxy's rules: which host names and ports a sandbox may reach (exact and `*.` wildcard rules,
// an optional port; the site's deny rules win), and which resolved addresses may be connected to
// (none in a special range unless the site lists it). Hosts reach these checks only in the
// canonical form of the strict grammar (host-name.ts).
import { BlockList, isIP } from "node:net";
import {
  formatHost,
  type Host,
  type HostRule,
  parseHost,
  parseHostRule,
  ruleNames,
} from "../sam/host-name.ts";
import { DEFAULT_PORTS, type NetworkRules, parseCidr } from "../sam/host-rules.ts";
import { localRanges } from "./host-addresses.ts";

/** An allow rule without a port allows 80 and 443; a deny rule without a port denies every port. */
function matches(rule: HostRule, host: Host, port: number, deny = false): boolean {
  const portOk = rule.port === undefined ? deny || DEFAULT_PORTS.includes(port) : rule.port === port;
  return portOk && ruleNames(rule, host);
}

/** Special ranges an answer may not fall in unless the site lists it (IPv4 and IPv6). */
export const SPECIAL_RANGES: readonly [string, number, "ipv4" | "ipv6"][] = [
  ["0.0.0.0", 8, "ipv4"],
  ["10.0.0.0", 8, "ipv4"],
  ["100.64.0.0", 10, "ipv4"],
  ["127.0.0.0", 8, "ipv4"],
  ["169.254.0.0", 16, "ipv4"],
  ["172.16.0.0", 12, "ipv4"],
  ["192.0.0.0", 24, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["198.18.0.0", 15, "ipv4"],
  ["224.0.0.0", 4, "ipv4"],
  ["240.0.0.0", 4, "ipv4"],
  ["::", 128, "ipv6"],
  ["::1", 128, "ipv6"],
  ["fc00::", 7, "ipv6"],
  ["fe80::", 10, "ipv6"],
  ["ff00::", 8, "ipv6"],
  ["64:ff9b::", 96, "ipv6"],
  // Not globally reachable, or embedding an IPv4 address (IANA's special-purpose registries).
  ["192.88.99.0", 24, "ipv4"],
  ["64:ff9b:1::", 48, "ipv6"],
  ["100::", 64, "ipv6"],
  ["2001:2::", 48, "ipv6"],
  ["2001:db8::", 32, "ipv6"],
  ["2002::", 16, "ipv6"],
  ["3fff::", 20, "ipv6"],
  ["fec0::", 10, "ipv6"],
];

export class Rules {
  readonly allow: HostRule[];
  /** `*` in the allow list (`network: true` through the proxy): any host, any port, deny still wins. */
  readonly anyHost: boolean;
  readonly deny: HostRule[];
  private readonly special = new BlockList();
  private readonly permitted = new BlockList();

  constructor(rules: NetworkRules) {
    const parse = (t: string) => {
      const r = parseHostRule(t);
      if (!r) throw new Error(`not a host rule: ${JSON.stringify(t)} (write host, *.host or host:port)`);
      return r;
    };
    this.anyHost = rules.allow.includes("*");
    this.allow = rules.allow.filter((t) => t !== "*").map(parse);
    this.deny = rules.deny.map(parse);
    for (const [net, prefix, type] of SPECIAL_RANGES) this.special.addSubnet(net, prefix, type);
    for (const text of rules.allowedPrivateRanges) {
      const c = parseCidr(text);
      if (!c) throw new Error(`not an address range: ${JSON.stringify(text)} (write e.g. 10.1.0.0/16)`);
      this.permitted.addSubnet(c.net, c.prefix, c.type);
    }
  }

  /** Adds an allow rule for the rest of the run (an approved request); a rule already there is kept once. */
  addAllow(text: string): void {
    const r = parseHostRule(text);
    if (!r) throw new Error(`not a host rule: ${JSON.stringify(text)}`);
    if (!this.allow.some((a) => a.text === r.text)) this.allow.push(r);
  }

  /**
   * The name check: which rule allows `host:port`, or why not. A string is parsed by the strict
   * grammar first (host-name.ts); the rules only ever see the canonical host.
   */
  check(
    host: string | Host,
    port: number,
  ): { allowed: true; rule: string } | { allowed: false; rule: string; reason: string } {
    let h: Host;
    if (typeof host === "string") {
      const parsed = parseHost(host);
      if (!parsed.ok) return { allowed: false, rule: "bad-host", reason: parsed.why };
      h = parsed.value;
    } else h = host;
    const shown = formatHost(h);
    const denied = this.deny.find((r) => matches(r, h, port, true));
    if (denied)
      return {
        allowed: false,
        rule: `deny ${denied.text}`,
        reason: `${shown}:${port} is denied by the site (${denied.text})`,
      };
    const allowed = this.allow.find((r) => matches(r, h, port));
    if (allowed) return { allowed: true, rule: `allow ${allowed.text}` };
    if (this.anyHost) return { allowed: true, rule: "allow * (network: true)" };
    if (h.kind === "ip")
      return {
        allowed: false,
        rule: "raw-ip",
        reason: `${shown} is an address, not a host on the list; only listed host names are reachable`,
      };
    return {
      allowed: false,
      rule: "not-listed",
      reason: `${shown}:${port} is not on this task's network list (allowed: ${this.allow.map((r) => r.text).join(", ") || "nothing"})`,
    };
  }

  /**
   * The deny rule naming a resolved address, if any: the name check is made again on what is used
   * (a site that denies an address denies every name that resolves to it).
   */
  deniedAddress(address: string, port: number): HostRule | undefined {
    // A mapped address is the IPv4 address it maps (a rule names that one).
    const parsed = parseHost(plainAddress(address)[0]);
    if (!parsed.ok) return undefined;
    const host = parsed.value;
    return this.deny.find((r) => matches(r, host, port, true));
  }

  /** Whether an answer may be connected to. */
  addressAllowed(address: string): boolean {
    return this.addressProblem(address) === undefined;
  }

  /**
   * Why an answer may not be connected to: a special range, or this host's own addresses and the
   * prefixes on its links as they are now (read at each call, so an address the host got after the
   * proxy started counts too), unless the site lists the range.
   */
  addressProblem(address: string, local?: BlockList): "special" | "this-host" | undefined {
    const [a, t] = plainAddress(address);
    const problem =
      this.special.check(a, t) || embedsIpv4(a, t)
        ? "special"
        : (local ?? hostRanges()).check(a, t)
          ? "this-host"
          : undefined;
    if (problem === undefined || this.permitted.check(a, t)) return undefined;
    return problem;
  }
}

/** An IPv4-mapped IPv6 address (`::ffff:1.2.3.4` or `::ffff:102:304`) as the IPv4 address it is. */
function plainAddress(address: string): [string, "ipv4" | "ipv6"] {
  if (isIP(address) !== 6) return [address, "ipv4"];
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted?.[1]) return [dotted[1], "ipv4"];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex?.[1] && hex[2]) {
    const hi = Number.parseInt(hex[1], 16);
    const lo = Number.parseInt(hex[2], 16);
    return [`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, "ipv4"];
  }
  return [address, "ipv6"];
}

/**
 * IPv4-compatible (`::a.b.c.d`, ::/96, deprecated) and IPv4-translated (`::ffff:0:a.b.c.d`,
 * ::ffff:0:0:0/96) addresses: special whatever they embed. Checked here, not in the BlockList, where
 * an IPv6 rule over ::/96 would match every IPv4 address checked.
 */
function embedsIpv4(address: string, type: "ipv4" | "ipv6"): boolean {
  if (type !== "ipv6") return false;
  const groups = expandIpv6(address);
  if (!groups) return false;
  const zeros = (n: number) => groups.slice(0, n).every((g) => g === 0);
  const compatible = zeros(6) && (groups[6] !== 0 || (groups[7] ?? 0) > 1);
  const translated = zeros(4) && groups[4] === 0xffff && groups[5] === 0;
  return compatible || translated;
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail included); undefined if not one. */
function expandIpv6(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [b1, b2, b3, b4] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((b1 << 8) | b2).toString(16)}:${((b3 << 8) | b4).toString(16)}`;
  }
  const [head, tail] = text.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const fill = text.includes("::") ? 8 - h.length - t.length : 0;
  const all = [...h, ...Array(Math.max(0, fill)).fill("0"), ...t].map((g) => Number.parseInt(g, 16));
  return all.length === 8 && all.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? all : undefined;
}

/** This host's addresses and the prefixes on its links, every interface, read now. */
export function hostRanges(): BlockList {
  const list = new BlockList();
  for (const r of localRanges()) {
    const type = r.family === 4 ? "ipv4" : "ipv6";
    try {
      list.addSubnet(r.address, r.prefix, type);
    } catch {
      // an entry the kernel shows that is no address: nothing to refuse by it
    }
  }
  return list;
}
