// The network capture of an instance with a host list, set up from the host in its namespaces.
import { execa } from "execa";
import { CAPTURE_SH } from "../../network/run-proxy.ts";
import { findOnPath, NEUTRAL_CWD } from "./engine.ts";

/**
 * The network capture (runner/network/run-proxy.ts CAPTURE_SH) in an instance with a host list: the
 * instance's namespace is configured from the host, as the seal is. Entering the instance's user
 * namespace gives this process CAP_NET_ADMIN there; it is made ambient so that the image's `ip` and
 * `iptables` (run as the user) keep it; then the network and mount namespaces are joined. Returns
 * why it could not be set up, or undefined when it is on.
 */
export async function setUpCapture(pid: number): Promise<string | undefined> {
  const perl = await findOnPath("perl");
  if (!perl) return "the host has no perl to enter the instance's namespaces";
  const calls = process.arch === "arm64" ? [268, 90, 91, 167] : [308, 125, 126, 157];
  const r = await execa(perl, ["-e", CAPTURE_PERL, ...calls.map(String), String(pid), CAPTURE_SH], {
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
    extendEnv: false,
    cwd: NEUTRAL_CWD,
    reject: false,
    stdin: "ignore",
    timeout: 20_000,
  });
  if (r.exitCode === 0 && r.stdout.includes("scifi-net capture on")) return undefined;
  return `${r.stderr || r.stdout}`.trim().slice(-300) || `exit ${r.exitCode}`;
}

/** argv: setns, capget, capset and prctl syscall numbers, the init's host pid, the script. */
export const CAPTURE_PERL = `
use strict;
my ($SETNS, $CAPGET, $CAPSET, $PRCTL, $pid, $script) = @ARGV;
open(my $user, "<", "/proc/$pid/ns/user") or die "user namespace: $!\n";
open(my $net, "<", "/proc/$pid/ns/net") or die "network namespace: $!\n";
open(my $mnt, "<", "/proc/$pid/ns/mnt") or die "mount namespace: $!\n";
syscall($SETNS, fileno($user), 0x10000000) == 0 or die "join the user namespace: $!\n";
my $hdr = pack("LL", 0x20080522, 0);
my $data = "\\0" x 24;
syscall($CAPGET, $hdr, $data) == 0 or die "capget: $!\n";
my @caps = unpack("L6", $data);
$caps[2] |= 1 << 12;
$data = pack("L6", @caps);
syscall($CAPSET, $hdr, $data) == 0 or die "capset: $!\n";
syscall($PRCTL, 47, 2, 12, 0, 0) == 0 or die "ambient CAP_NET_ADMIN: $!\n";
syscall($SETNS, fileno($net), 0x40000000) == 0 or die "join the network namespace: $!\n";
syscall($SETNS, fileno($mnt), 0x00020000) == 0 or die "join the mount namespace: $!\n";
exec("/bin/sh", "-c", $script) or die "exec /bin/sh: $!\n";
`;
