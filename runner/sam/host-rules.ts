// The host rules a SAM's `network: [..]` and the site policy's network lists are written in, and
// address ranges: the parser validates them (runner/sam/metadata.ts), so it owns their grammar;
// the run's proxy (runner/network/proxy.ts) matches connections against them.
import { isIP } from "node:net";

/** One rule: `data.example.org`, `*.example.org` (subdomains only), either with `:port`. */
export interface HostRule {
  /** The rule as written, for the record. */
  text: string;
  host: string;
  wildcard: boolean;
  /** Absent: the default ports (80 and 443). */
  port?: number;
}

export interface NetworkRules {
  allow: string[];
  deny: string[];
  /** CIDR ranges in the special ranges that answers may still fall in (the site's `allowedPrivateRanges`). */
  allowedPrivateRanges: string[];
}

/** The ports an allow rule without one allows. */
export const DEFAULT_PORTS = [80, 443];

const HOST_RE = /^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** Parses `host`, `*.host`, `host:port`; undefined when it is not one of those. */
export function parseHostRule(text: string): HostRule | undefined {
  const t = text.trim().toLowerCase();
  const m = /^(.*?)(?::(\d{1,5}))?$/.exec(t);
  if (!m) return undefined;
  const hostPart = m[1] ?? "";
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  const ipOk = isIP(hostPart) === 4;
  if (!ipOk && (!HOST_RE.test(hostPart) || hostPart.length > 253)) return undefined;
  const wildcard = hostPart.startsWith("*.");
  return {
    text: t,
    host: wildcard ? hostPart.slice(2) : hostPart,
    wildcard,
    ...(port !== undefined ? { port } : {}),
  };
}

/** Parses `10.1.0.0/16` or a single address; undefined when it is neither. */
export function parseCidr(cidr: string): { net: string; prefix: number; type: "ipv4" | "ipv6" } | undefined {
  const [net, p] = cidr.trim().split("/");
  const type = isIP(net ?? "");
  if (!net || !type) return undefined;
  const max = type === 4 ? 32 : 128;
  const prefix = p === undefined ? max : Number(p);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return undefined;
  return { net, prefix, type: type === 4 ? "ipv4" : "ipv6" };
}

/** Whether a string is a CIDR range (`10.1.0.0/16`) or a single address. */
export function isCidr(text: string): boolean {
  return parseCidr(text) !== undefined;
}
