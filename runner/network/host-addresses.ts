// This host's own addresses and the prefixes on its links, as the kernel has them now: what the
// proxy refuses an answer in (per connection) and what the `network: true` filter refuses. Read from
// /proc/net (the kernel's local addresses, every interface whatever its state: an address on an
// interface that is down is still delivered locally; Node's networkInterfaces() skips those), or
// from networkInterfaces() where /proc/net is not there.
import { readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";

export interface LocalRange {
  /** An address of this host, or the network address of a prefix on one of its links. */
  address: string;
  prefix: number;
  family: 4 | 6;
}

const read = (file: string): string => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
};

/** `0100007F` (a little-endian hex word of /proc/net/route) as `127.0.0.1`. */
function hexV4(hex: string): string {
  const n = Number.parseInt(hex, 16);
  return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24].join(".");
}

/** `fd000000...0002` (a line of /proc/net/if_inet6) as `fd00::2`. */
function hexV6(hex: string): string {
  const full = (hex.match(/.{4}/g) ?? []).join(":");
  try {
    return new URL(`http://[${full}]/`).hostname.slice(1, -1);
  } catch {
    return full;
  }
}

function prefixOfMask(hex: string): number {
  let n = Number.parseInt(hex, 16) >>> 0;
  let bits = 0;
  while (n) {
    bits += n & 1;
    n >>>= 1;
  }
  return bits;
}

/** Every address of this host and every prefix on its links (IPv4 and IPv6), read now. */
export function localRanges(): LocalRange[] {
  const out: LocalRange[] = [];
  // IPv4 local addresses: the LOCAL entries of the kernel's routing trie.
  const trie = read("/proc/net/fib_trie");
  for (const m of trie.matchAll(/\|-- (\d+\.\d+\.\d+\.\d+)\n((?:[ \t]+\/\d+ [^\n]*\n)+)/g))
    if (/\/32 host LOCAL/.test(m[2] ?? "")) out.push({ address: m[1] ?? "", prefix: 32, family: 4 });
  // IPv4 on-link prefixes: routes without a gateway (the default route aside).
  for (const line of read("/proc/net/route").split("\n").slice(1)) {
    const [, dest, gateway, , , , , mask] = line.trim().split(/\s+/);
    if (!dest || !mask || gateway !== "00000000" || mask === "00000000") continue;
    out.push({ address: hexV4(dest), prefix: prefixOfMask(mask), family: 4 });
  }
  // IPv6: each address with its prefix (the prefix is on that link).
  for (const line of read("/proc/net/if_inet6").split("\n")) {
    const [hex, , plen] = line.trim().split(/\s+/);
    if (hex?.length !== 32 || !plen) continue;
    const address = hexV6(hex);
    out.push({ address, prefix: 128, family: 6 }, { address, prefix: Number.parseInt(plen, 16), family: 6 });
  }
  // No /proc/net here (not Linux): what Node sees, interfaces that are up.
  if (out.length > 0) return out;
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) {
      const family = a.family === "IPv4" ? 4 : 6;
      const address = a.address.replace(/%.*$/, "");
      out.push({ address, prefix: family === 4 ? 32 : 128, family });
      const prefix = Number(a.cidr?.split("/")[1]);
      if (Number.isInteger(prefix)) out.push({ address, prefix, family });
    }
  return out;
}
