// CPU pinning: unprivileged Apptainer has no CPU quota, so execs run under taskset on `cpus` CPUs.

import { existsSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { sha256 } from "../../sha256.ts";
import { findOnPath } from "./engine.ts";

/**
 * Unprivileged Apptainer cannot set a CPU quota (that needs cgroups), so execs are pinned to
 * `cpus` of the CPUs this process may use, with taskset (util-linux) on the host: the affinity is
 * inherited through apptainer into the container, and `nproc` there says the same. Sandboxes start
 * at different CPUs (by name) so that concurrent ones spread out. No pinning when the sandbox may
 * use every CPU anyway, or when the host has no taskset (then cpus is not enforced: docs/apptainer.md).
 */
export async function cpuPinning(cpus: number, name: string): Promise<string[]> {
  const allowed = allowedCpus();
  const want = Math.max(1, Math.ceil(cpus));
  if (allowed.length <= want) return [];
  const taskset = await findOnPath("taskset");
  if (!taskset) return [];
  return [taskset, "-c", pickCpus(allowed, want, name).join(",")];
}

/** `want` of the allowed CPUs, consecutive (wrapping), starting at a place the key decides. */
export function pickCpus(allowed: number[], want: number, key: string): number[] {
  const start = Number.parseInt(sha256(key).slice(0, 8), 16) % allowed.length;
  return Array.from({ length: want }, (_, i) => allowed[(start + i) % allowed.length] as number).sort(
    (a, b) => a - b,
  );
}

/** The CPUs this process may run on (Cpus_allowed_list of /proc/self/status), e.g. "0-3,8". */
export function allowedCpus(): number[] {
  const status = existsSync("/proc/self/status") ? readFileSync("/proc/self/status", "utf8") : "";
  const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(status)?.[1];
  if (!list) return Array.from({ length: availableParallelism() }, (_, i) => i);
  return list.split(",").flatMap((range) => {
    const [from = 0, to = from] = range.split("-").map(Number);
    return Array.from({ length: to - from + 1 }, (_, i) => from + i);
  });
}
