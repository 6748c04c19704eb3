// Blocks a sandbox holds where no walk of the task folder sees them: files deleted while a process
// of the sandbox keeps them open (or mapped). The quota guard (guard.ts) adds them to the walk's
// count (issue 32, A32-1/A32-5). Host-side and engine-blind: a backend names its processes'
// PID namespace (Sandbox.pidNamespace), this reads /proc.
import { readdir, readlink, stat } from "node:fs/promises";

export interface HeldUsage {
  /** Allocated bytes of deleted regular files on `devices`, each inode once. */
  bytes: number;
  /** How many such files. */
  files: number;
}

/**
 * The deleted regular files that processes in PID namespace `pidNs` (a /proc/PID/ns/pid link text,
 * e.g. "pid:[4026532812]") hold open or mapped, on the given devices (the task folder's st_dev).
 * stat() through /proc/PID/fd/N reaches the open file itself, never a path: nothing is opened, so a
 * FIFO or device the agent made cannot block this. Mappings (/proc/PID/map_files) are readable only
 * with CAP_CHECKPOINT_RESTORE (a root runner); without it, a file mapped and closed is not seen
 * (docs/sandbox.md states it).
 */
export async function heldDeletedFiles(pidNs: string, devices: ReadonlySet<number>): Promise<HeldUsage> {
  const seen = new Set<string>();
  let bytes = 0;
  for (const pid of await namespacePids(pidNs)) {
    for (const folder of ["fd", "map_files"]) {
      const base = `/proc/${pid}/${folder}`;
      for (const entry of await readdir(base).catch(() => [] as string[])) {
        const st = await stat(`${base}/${entry}`).catch(() => undefined);
        if (!st?.isFile() || st.nlink !== 0 || !devices.has(st.dev)) continue;
        const key = `${st.dev}:${st.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
        bytes += st.blocks * 512;
      }
    }
  }
  return { bytes, files: seen.size };
}

/** Host pids of every process in PID namespace `pidNs` (a process the runner may not inspect is left out). */
export async function namespacePids(pidNs: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    if ((await readlink(`/proc/${entry}/ns/pid`).catch(() => "")) === pidNs) pids.push(Number(entry));
  }
  return pids;
}

/** The PID namespace of host pid `pid`, or undefined when it is gone or not the runner's to inspect. */
export async function pidNamespaceOf(pid: number): Promise<string | undefined> {
  return readlink(`/proc/${pid}/ns/pid`).catch(() => undefined);
}
