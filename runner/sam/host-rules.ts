// The host rules a SAM's `network: [..]` and the site policy's network lists are written in, and
// address ranges: the parser validates them (runner/sam/metadata.ts), so it owns their vocabulary;
// the grammar of a host itself is host-name.ts, and the run's proxy (runner/network/rules.ts)
// matches connections against these rules in that canonical form.
import { isIP } from "node:net";

export type { HostRule } from "./host-name.ts";
export { parseHostRule } from "./host-name.ts";

export interface NetworkRules {
  allow: string[];
  deny: string[];
  /** CIDR ranges in the special ranges that answers may still fall in (the site's `allowedPrivateRanges`). */
  allowedPrivateRanges: string[];
}

/** The ports an allow rule without one allows. */
export const DEFAULT_PORTS = [80, 443];

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
