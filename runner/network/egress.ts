// `network: true` on Docker: the sandbox sits on a bridge network of the run's own and may reach
// any public address with any protocol, but not the host it runs on, the LAN, other sandboxes or
// anything else in the special ranges the proxy refuses too (runner/network/proxy.ts), unless the
// site lists the range in `allowedPrivateRanges`. The filter lives in the network namespace, set
// up by a holder container before the sandbox joins it; the sandbox has no capability to change it.

import { BlockList, isIP } from "node:net";
import type { NetworkRules } from "../sam/host-rules.ts";
import { localRanges } from "./host-addresses.ts";
import { SPECIAL_RANGES } from "./rules.ts";

/**
 * The host's own addresses and the prefixes on its links (all interfaces but loopback, as CIDRs):
 * never reachable from `network: true`, so a neighbour on a publicly addressed LAN is refused too.
 * Read when the filter is made; watchHostAddresses adds what the host gets later.
 */
export function hostAddresses(): string[] {
  const out = new Set<string>();
  // What the special ranges cover is refused already (loopback is for the namespace's own use).
  const special = new BlockList();
  for (const [net, prefix, type] of SPECIAL_RANGES) special.addSubnet(net, prefix, type);
  for (const r of localRanges()) {
    if (special.check(r.address, r.family === 4 ? "ipv4" : "ipv6")) continue;
    out.add(r.prefix === (r.family === 4 ? 32 : 128) ? r.address : `${r.address}/${r.prefix}`);
  }
  return [...out];
}

/** Docker's embedded resolver inside a user-defined network's namespace. */
export const EMBEDDED_DNS = "127.0.0.11";

/**
 * Whether Docker's embedded resolver would ask a resolver on this host's loopback for the sandbox.
 * dockerd forwards what 127.0.0.11 cannot answer to the host's nameservers; one that is not on
 * loopback it dials inside the sandbox's namespace, where the egress filter judges it (a private
 * resolver is refused unless the site lists it: test/network/docker.test.ts). A loopback one
 * (dnsmasq on 127.0.0.1; Docker 26 and later) it dials from the host's namespace, past the filter:
 * then the filter refuses 127.0.0.11 and the sandbox has no DNS (docs/sandbox.md). systemd-resolved's
 * 127.0.0.53 does not count: dockerd reads its upstreams (`systemdConf`) instead.
 */
export function embeddedDnsReachesHost(resolvConf: string, systemdConf?: string): boolean {
  const servers = (text: string) =>
    text
      .split("\n")
      .map((l) => /^\s*nameserver\s+(\S+)/.exec(l)?.[1])
      .filter((a): a is string => a !== undefined);
  let upstream = servers(resolvConf);
  if (systemdConf !== undefined && upstream.length > 0 && upstream.every((a) => a === "127.0.0.53"))
    upstream = servers(systemdConf);
  return upstream.some((a) => a.startsWith("127.") || a === "::1");
}

const shellSafe = (text: string) => /^[0-9a-fA-F.:/]+$/.test(text);

/**
 * The shell script the holder runs as root (CAP_NET_ADMIN in its namespace only) before it drops to
 * the sandbox's uid: loopback and the site's ranges accepted, then the special ranges and the host's
 * own addresses refused (REJECT, so a client fails at once with a clear error). IPv6 the same where
 * the namespace has it. Prints `scifi-net filter on` when every rule is in.
 */
export function egressFilterScript(
  rules: NetworkRules,
  host: string[] = hostAddresses(),
  /** Also refuse the addresses in this environment variable, read where the script runs (a job's node). */
  hostVariable?: string,
  /** Refuse Docker's embedded resolver (127.0.0.11) too: see embeddedDnsReachesHost. */
  refuseEmbeddedDns = false,
): string {
  const allowed = rules.allowedPrivateRanges.filter(shellSafe);
  const v4 = (t: string) => isIP(t.split("/")[0] ?? "") === 4;
  const refused = (type: "ipv4" | "ipv6") => [
    ...SPECIAL_RANGES.filter(([, , t]) => t === type)
      .filter(([net]) => !(type === "ipv4" && net === "127.0.0.0"))
      .map(([net, prefix]) => `${net}/${prefix}`),
    ...host.filter(shellSafe).filter((a) => (type === "ipv4" ? v4(a) : !v4(a))),
  ];
  const block = (tool: string, type: "ipv4" | "ipv6") =>
    [
      ...(refuseEmbeddedDns && type === "ipv4" ? [`$${tool} -A OUTPUT -d ${EMBEDDED_DNS} -j REJECT`] : []),
      `$${tool} -A OUTPUT -o lo -j ACCEPT`,
      ...allowed
        .filter((r) => (type === "ipv4" ? v4(r) : !v4(r)))
        .map((r) => `$${tool} -A OUTPUT -d ${r} -j ACCEPT`),
      ...refused(type).map((r) => `$${tool} -A OUTPUT -d ${r} -j REJECT`),
      ...(hostVariable
        ? [
            `for a in $${hostVariable}; do case "$a" in *[!0-9a-fA-F.:]*|"") continue ;; esac; case "$a" in *:*) ${type === "ipv6" ? ";;" : "continue ;;"} *) ${type === "ipv6" ? "continue ;;" : ";;"} esac; $${tool} -A OUTPUT -d "$a" -j REJECT; done`,
          ]
        : []),
    ].join("\n");
  return [
    "set -e",
    "export XTABLES_LOCKFILE=/tmp/.scifi-xtables.lock",
    'command -v iptables >/dev/null || { echo "the image has no iptables" >&2; exit 1; }',
    'command -v setpriv >/dev/null || { echo "the image has no setpriv" >&2; exit 1; }',
    "ipt=iptables",
    "$ipt -S OUTPUT >/dev/null 2>&1 || ipt=iptables-legacy",
    block("ipt", "ipv4"),
    'if [ -e /proc/net/if_inet6 ] && [ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null)" != 1 ]; then',
    "ip6=ip6tables",
    "$ip6 -S OUTPUT >/dev/null 2>&1 || ip6=ip6tables-legacy",
    block("ip6", "ipv6"),
    "fi",
    "echo scifi-net filter on",
    "",
  ].join("\n");
}

/**
 * Appends refusals of `entries` (addresses or CIDRs) to a filter already in place: run as root in
 * the holder's namespace when this host gets an address after the sandbox started. The site's
 * ranges stay accepted (their rules come first).
 */
export function egressAddScript(entries: string[]): string {
  const safe = entries.filter(shellSafe);
  const v4 = safe.filter((t) => isIP(t.split("/")[0] ?? "") === 4);
  const v6 = safe.filter((t) => isIP(t.split("/")[0] ?? "") === 6);
  return [
    "export XTABLES_LOCKFILE=/tmp/.scifi-xtables.lock",
    "ipt=iptables",
    "$ipt -S OUTPUT >/dev/null 2>&1 || ipt=iptables-legacy",
    ...v4.map((a) => `$ipt -A OUTPUT -d ${a} -j REJECT`),
    'if [ -e /proc/net/if_inet6 ] && [ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null)" != 1 ]; then',
    "ip6=ip6tables",
    "$ip6 -S OUTPUT >/dev/null 2>&1 || ip6=ip6tables-legacy",
    ...v6.map((a) => `$ip6 -A OUTPUT -d ${a} -j REJECT`),
    ":",
    "fi",
    "",
  ].join("\n");
}

/**
 * Watches this host's addresses and on-link prefixes (every `everyMs`): each one not in `known` is
 * passed to `add` once (which puts it into a running filter). Returns the stop. The window between
 * an address appearing and its refusal is at most `everyMs` plus the time `add` takes.
 */
export function watchHostAddresses(
  known: Iterable<string>,
  add: (fresh: string[]) => Promise<unknown>,
  everyMs = 1000,
): () => void {
  const seen = new Set(known);
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    const fresh = hostAddresses().filter((a) => !seen.has(a));
    if (fresh.length === 0) return;
    busy = true;
    add(fresh)
      .then(() => {
        for (const a of fresh) seen.add(a);
      })
      .catch(() => undefined)
      .finally(() => {
        busy = false;
      });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
