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

/**
 * Which sandbox of which run: the data a sandbox's name is made of. The name is formatted in one
 * place (sandboxName); nothing parses a name back (the network records, approvals and the live
 * registry read this data).
 */
export interface SandboxIdentity {
  /** The run's id. */
  runId: string;
  /** What the sandbox is for: the run's `work`, `checks` (a run stage), `compare` or `review`. */
  role: string;
  /** The loop iteration it serves. */
  iteration: number;
  /** How many times the run had been resumed when it started (0: never). */
  resumes: number;
  /** A check sandbox's stage: 0 (or absent) for the first, 1 for the second, ... */
  stage?: number;
}

/**
 * The sandbox's name: `<run>[-r<resumes>]-<role>[.<stage + 1>]<iteration>` for a run's sandbox,
 * the spec's run id for one started outside a run's phases (tests, benchmarks). Names containers,
 * instances and their records; the one place it is formatted.
 */
export function sandboxName(spec: Pick<SandboxSpec, "runId" | "sandbox">): string {
  const id = spec.sandbox;
  if (!id) return spec.runId;
  const resumed = id.resumes > 0 ? `-r${id.resumes}` : "";
  const stage = id.stage ? `.${id.stage + 1}` : "";
  return `${id.runId}${resumed}-${id.role}${stage}${id.iteration}`;
}

export interface SandboxSpec {
  /**
   * The run's id: labels the sandbox for orphan cleanup (prune) and keys the live registry and the
   * network records. Names the sandbox too when `sandbox` is absent.
   */
  runId: string;
  /** Which of the run's sandboxes this is (its name: sandboxName); absent outside a run's phases. */
  sandbox?: SandboxIdentity;
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
