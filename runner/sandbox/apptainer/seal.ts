// What closes an instance beyond Apptainer's own flags: the seccomp profile and the /proc/1 mask
// given at start (hardeningArgs), and the seal applied from the host after it (sealInstance).
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { bindSpec } from "../bind-spec.ts";
import { findOnPath, NEUTRAL_CWD } from "./engine.ts";
import type { NsInit } from "./process-tree.ts";

/**
 * Closes what seccomp and the /proc/1 mask leave open, from the host, as the instance's owner (the
 * instance's user namespace is ours, so joining it gives every capability in it), with a short perl
 * program (perl: on the host, not in the image; it calls setns and mount itself, where util-linux's
 * nsenter and mount drop or refuse those capabilities for a non-root uid):
 * - `user.max_user_namespaces` of the instance's user namespace set to 0: no process of the sandbox
 *   can create a user namespace by any call (clone3 included, which seccomp cannot judge);
 * - in the instance's mount namespace, the empty /proc/1 bound over /proc/TID of every thread of
 *   the init: their environ is the init's (Apptainer's ENGINE_CONFIG).
 * Best effort on hosts without perl (docs/apptainer.md says what stays open then); threads the init
 * starts later are masked before the next exec (ApptainerSandbox.#run).
 */
export async function sealInstance(init: NsInit): Promise<void> {
  const threads = (await initThreads(init.pid)).filter((t) => !init.sealed.has(t.host));
  const tids = threads.map((t) => t.inner);
  const perl = await findOnPath("perl");
  if (!perl) return;
  const [setns, mount] = process.arch === "arm64" ? [268, 40] : [308, 165];
  const r = await execa(perl, ["-e", SEAL_PERL, String(setns), String(mount), String(init.pid), ...tids], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    extendEnv: false,
    cwd: NEUTRAL_CWD,
    reject: false,
    stdin: "ignore",
    timeout: 20_000,
  });
  if (r.exitCode !== 0) return;
  init.sealedOnce = true;
  for (const t of threads) init.sealed.add(t.host);
}

/** The init's threads other than itself: host id and id in the instance's PID namespace. */
export async function initThreads(pid: number): Promise<{ host: string; inner: string }[]> {
  const threads: { host: string; inner: string }[] = [];
  for (const task of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const status = await readFile(`/proc/${pid}/task/${task}/status`, "latin1").catch(() => "");
    const inner = /^NSpid:\s+([\d\s]+)$/m.exec(status)?.[1]?.trim().split(/\s+/).at(-1);
    if (inner && inner !== "1") threads.push({ host: task, inner });
  }
  return threads;
}

/** argv: setns and mount syscall numbers, the init's host pid, the thread ids to mask. */
export const SEAL_PERL = `
use strict;
my ($SETNS, $MOUNT, $pid, @tids) = @ARGV;
open(my $user, "<", "/proc/$pid/ns/user") or die "user namespace: $!\n";
open(my $mnt, "<", "/proc/$pid/ns/mnt") or die "mount namespace: $!\n";
syscall($SETNS, fileno($user), 0x10000000) == 0 or die "join the user namespace: $!\n";
open(my $max, ">", "/proc/sys/user/max_user_namespaces") or die "max_user_namespaces: $!\n";
print $max "0\n";
close($max) or die "max_user_namespaces: $!\n";
syscall($SETNS, fileno($mnt), 0x00020000) == 0 or die "join the mount namespace: $!\n";
for my $tid (@tids) {
  my ($src, $dst) = ("/proc/1", "/proc/$tid");
  syscall($MOUNT, $src, $dst, 0, 4096, 0) == 0 or die "mask /proc/$tid: $!\n";
}
`;

/**
 * What every instance gets on top of the spec:
 * - a seccomp filter (Apptainer applies it unprivileged, to the instance and every exec into it)
 *   that refuses new user namespaces (`unshare -r`, clone with CLONE_NEWUSER), namespace joins and
 *   every mount call: the sandbox cannot build itself a namespace where it holds capabilities;
 * - an empty, read-only folder over `/proc/1`: the instance's init carries Apptainer's ENGINE_CONFIG
 *   (bind sources, image, the user's home) in its environment, readable by the same uid (its
 *   threads' /proc entries are masked after the start: sealInstance).
 */
export async function hardeningArgs(stateDir: string): Promise<string[]> {
  const profile = join(stateDir, "seccomp.json");
  await writeFile(profile, `${JSON.stringify(seccompProfile(process.arch))}\n`, { mode: 0o600 });
  const empty = join(stateDir, "empty");
  await mkdir(empty, { mode: 0o500 });
  return [
    "--security",
    `seccomp:${profile}`,
    "--bind",
    bindSpec(empty, "/proc/1", "ro", "the mask over /proc/1"),
  ];
}

/** FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE: the fallocate modes that free space. */
const FREEING_MODES = 0x02 | 0x08;

/** CLONE_NEWUSER, as clone(2)'s first argument carries it on x86_64 and arm64. */
export const CLONE_NEWUSER = 0x10000000;

/**
 * The sandbox's seccomp profile (OCI format, as Apptainer reads it): everything is allowed but the
 * calls that build or join namespaces or mount, and an allocating fallocate; those fail with EPERM
 * (Apptainer ignores `errnoRet`, so posix_fallocate fails too instead of falling back to writes).
 * clone3 stays allowed: its flags sit in memory, which seccomp cannot read, and refusing it with
 * EPERM (not ENOSYS, after which libc would fall back to clone) breaks every new thread. A raw
 * clone3(CLONE_NEWUSER) is refused by the kernel instead: sealInstance sets the instance's
 * max_user_namespaces to 0 (docs/apptainer.md).
 */
export function seccompProfile(arch: string): object {
  const architectures =
    arch === "arm64"
      ? ["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]
      : ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"];
  const refuse = (names: string[]) => ({ names, action: "SCMP_ACT_ERRNO" });
  return {
    defaultAction: "SCMP_ACT_ALLOW",
    architectures,
    syscalls: [
      refuse(["unshare", "setns"]),
      refuse(["mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount"]),
      refuse(["fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"]),
      {
        ...refuse(["clone"]),
        args: [{ index: 0, value: CLONE_NEWUSER, valueTwo: CLONE_NEWUSER, op: "SCMP_CMP_MASKED_EQ" }],
      },
      // An allocating fallocate reserves any number of blocks in one call, faster than the quota's
      // poll (issue 32, A32-7); punching holes and collapsing ranges free space and stay allowed (the
      // kernel refuses either flag combined with an allocating one).
      {
        ...refuse(["fallocate"]),
        args: [{ index: 1, value: FREEING_MODES, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" }],
      },
    ],
  };
}
