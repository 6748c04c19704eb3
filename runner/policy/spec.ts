// The resolved sandbox specification: what a run is granted, after default-deny policy.
// Produced by runner/policy from a SamDocument plus the site policy; consumed by every sandbox backend.
import type { NetworkRules } from "../sam/host-rules.ts";

export interface MountSpec {
  /** Absolute, symlink-free host path. */
  source: string;
  /** Absolute container path. */
  target: string;
  readOnly: boolean;
  /** Why it is there: `task folder`, `sam file`, `check asset`, `declared mount (line 7)`. */
  reason: string;
}

export interface SandboxSpec {
  /** Run id; also names the container/instance and labels it for orphan cleanup. */
  runId: string;
  image: string;
  /** Host uid:gid the container runs as, so files in the task folder stay the user's. */
  user: { uid: number; gid: number };
  /** Host task folder (absolute, realpath). */
  taskDir: string;
  /** Where the task folder appears inside the container (fixed: `/task`). */
  workdir: string;
  mounts: MountSpec[];
  /** Unrestricted network (`network: true`): a per-run network of its own, never the default bridge. */
  network: boolean;
  /**
   * `network: [hosts]`: no network but a way to the run's proxy, which allows these rules (the SAM's
   * hosts, the site's denied hosts and private ranges). Absent: no network at all (unless `network`).
   */
  networkRules?: NetworkRules;
  /**
   * `network: true`: what keeps the host and the LAN out (the site's denied hosts and private
   * ranges; `allow: ["*"]`). Docker filters the run's own network with it; Apptainer, which has no
   * per-run network unprivileged, goes through the run's proxy with these rules unless the site
   * lets it use the host's network.
   */
  openNetwork?: { rules: NetworkRules; apptainerHostNetwork: boolean };
  gpus: number;
  cpus: number;
  memoryBytes: number;
  pidsLimit: number;
  /** Size-limited scratch at `/scratch`, when requested. */
  scratch?: { target: string; sizeBytes: number };
  walltimeSec: number;
  /**
   * Disk quota of the task folder: what the run may add to it, in allocated bytes (st_blocks), over
   * `baseBytes` (what it held at run start; measured when the sandbox starts if absent). Enforced by
   * runner/sandbox/guard.ts on every backend. Absent: no quota.
   */
  taskFolderQuota?: { maxAddBytes: number; baseBytes?: number };
  /** Extra environment inside the container (never secrets). */
  env: Record<string, string>;
  labels: Record<string, string>;
  /**
   * The scifi home whose runner starts the sandbox (absolute). Recorded with the sandbox's owner, so
   * that `prune` of one home never touches another home's sandboxes; never mounted. A spec without
   * it (a test's) belongs to no home, and no prune removes its sandbox.
   */
  home?: string;
}

/** Fixed container path of the task folder. */
export const TASK_MOUNT = "/task";
