// The GPUs of this machine, as the sandboxes can be given them: NVIDIA device nodes /dev/nvidia<N>
// (what Docker's and Apptainer's --gpus/--nv pass through). `plan`, `run` and `doctor` compare a
// SAM's `gpu:` with it, so a task asking for GPUs on a host without any is refused with a clear
// message instead of failing later in the engine with a driver error.
import { readdirSync } from "node:fs";

/** How many NVIDIA GPUs this host exposes (0 when /dev has none). */
export function hostGpuCount(devDir = "/dev"): number {
  try {
    return readdirSync(devDir).filter((name) => /^nvidia\d+$/.test(name)).length;
  } catch {
    return 0;
  }
}
