// `network: true` on Docker, on this host's side: a packet from the run's bridge to any address of
// this host (whatever it is, also one the host got a moment ago) is one the kernel routes to INPUT,
// so one REJECT there, matched by the bridge's interface, refuses this host per packet. The egress
// filter in the sandbox's namespace (runner/network/egress.ts) refuses the host's addresses it knows
// and the poll adds new ones within about a second; this rule closes that window. Only a root runner
// can set it (a non-root one keeps the poll: docs/sandbox.md). The site's `allowedPrivateRanges`
// stay reachable here as there.
import { execFile, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { isIP } from "node:net";

/** The bridge's interface name for the run's network (at most 15 characters, as the kernel wants). */
export function bridgeName(network: string): string {
  return `sf-${createHash("sha256").update(network).digest("hex").slice(0, 12)}`;
}

/** The iptables rules (after `-I INPUT` / `-D INPUT`), in the order they must be inserted. */
export function hostInputRules(
  bridge: string,
  allowed: readonly string[],
): { v4: string[][]; v6: string[][] } {
  const accept = (family: 4 | 6) =>
    allowed
      .filter((r) => /^[0-9a-fA-F.:/]+$/.test(r) && isIP(r.split("/")[0] ?? "") === family)
      .map((r) => ["-i", bridge, "-d", r, "-j", "ACCEPT"]);
  const reject = ["-i", bridge, "-j", "REJECT"];
  // `-I` puts each at the top: the REJECT first, the ACCEPTs after it, so they end up above it.
  return { v4: [reject, ...accept(4)], v6: [reject, ...accept(6)] };
}

function iptables(tool: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) =>
    execFile(tool, ["-w", "5", ...args], { timeout: 15_000 }, (error) => resolve(!error)),
  );
}

/**
 * Sets the rules for `bridge`; false when they could not be set (not root, no iptables), which
 * leaves the poll alone in charge (and removes what was set). IPv6 is best effort (a bridge without
 * IPv6 needs none).
 */
export async function guardHostInput(bridge: string, allowed: readonly string[]): Promise<boolean> {
  if (process.getuid?.() !== 0) return false;
  const rules = hostInputRules(bridge, allowed);
  for (const rule of rules.v4) {
    if (!(await iptables("iptables", ["-I", "INPUT", ...rule]))) {
      dropHostInput(bridge);
      return false;
    }
  }
  for (const rule of rules.v6) await iptables("ip6tables", ["-I", "INPUT", ...rule]);
  return true;
}

/**
 * Removes every INPUT rule that names `bridge` (at the network's removal, and by prune for a run
 * whose runner died). Synchronous, so the exit path can use it too; a no-op without root.
 */
export function dropHostInput(bridge: string): void {
  if (process.getuid?.() !== 0) return;
  for (const tool of ["iptables", "ip6tables"]) {
    const listed = spawnSync(tool, ["-w", "5", "-S", "INPUT"], { encoding: "utf8", timeout: 15_000 });
    for (const line of (listed.stdout ?? "").split("\n")) {
      const words = line.trim().split(/\s+/);
      if (words[0] !== "-A" || words[1] !== "INPUT" || !words.includes(bridge)) continue;
      spawnSync(tool, ["-w", "5", "-D", ...words.slice(1)], { stdio: "ignore", timeout: 15_000 });
    }
  }
}
