// Default-deny policy: turns a parsed SAM plus the site policy into the SandboxSpec a run is granted,
// or throws PolicyRefused naming the rule, the path and what to do. Nothing the SAM did not ask for
// is granted: the container sees the task folder (read-write at /task) with the SAM file, sub-SAM
// files and check assets bound read-only over themselves, and the declared mounts that pass every rule.

import { existsSync, realpathSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, isAbsolute, posix, relative, resolve } from "node:path";
import { DEFAULT_PORTS, type HostRule, type NetworkRules, parseHostRule } from "../sam/host-rules.ts";
import type { MountRequest, SamDocument } from "../sam/types.ts";
import { type DeniedPath, deniedPaths, sensitiveByName } from "./denied.ts";
import { hostGpuCount } from "./host-gpus.ts";
import { PolicyRefused } from "./refused.ts";
import type { SitePolicy } from "./site.ts";
import { type MountSpec, type SandboxSpec, TASK_MOUNT } from "./spec.ts";

export interface ResolveOptions {
  /** The scifi home (runner state, memory, skills, config): always denied. */
  home: string;
  /** The run's id, minted once by the run's setup (runner/run-id.ts); this only records it. */
  runId: string;
  /** Default: sandboxUser() (the invoking user, or the site's sandboxUser when that is root). */
  user?: { uid: number; gid: number };
  /** What the task folder held at run start (allocated bytes): the quota's base. Default: measured at each sandbox start. */
  taskFolderBaseBytes?: number;
  /** CPUs of the machine the run lands on; requests above it are refused. Default: this machine's. */
  hostCpus?: number;
  /** GPUs of the machine the run lands on (runner/policy/host-gpus.ts); requests above it are refused. */
  hostGpus?: number;
}

/** Container paths a declared mount may not take, be inside, or contain. */
const RESERVED_TARGETS = [
  "/",
  "/bin",
  "/sbin",
  "/lib",
  "/lib64",
  "/usr",
  "/etc",
  "/proc",
  "/sys",
  "/dev",
  "/run",
  "/tmp",
  "/var/tmp",
  "/scratch",
  TASK_MOUNT,
];
const SCRATCH_TARGET = "/scratch";

export function resolveSpec(sam: SamDocument, site: SitePolicy, options: ResolveOptions): SandboxSpec {
  const meta = sam.metadata;
  const denied = deniedPaths(options.home, site.deniedPaths);
  const taskDir = realpathSync(dirname(sam.file));
  refuseDeniedTaskFolder(taskDir, denied);
  const runId = options.runId;
  const limits = resolveLimits(sam, site, options);
  const protectedFiles = taskFileMounts(sam, taskDir);
  const mounts: MountSpec[] = [
    { source: taskDir, target: TASK_MOUNT, readOnly: false, reason: "task folder" },
    ...protectedFiles,
    ...declaredMounts(meta.mounts, dirname(sam.file), site, denied, taskDir),
  ];
  return {
    runId,
    image: meta.image ?? site.defaultImage,
    user: options.user ?? sandboxUser(site),
    taskDir,
    workdir: TASK_MOUNT,
    mounts,
    ...limits,
    taskFolderQuota: {
      maxAddBytes: site.maxTaskFolderBytes,
      ...(options.taskFolderBaseBytes !== undefined ? { baseBytes: options.taskFolderBaseBytes } : {}),
    },
    env: { SCIFI_RUN_ID: runId, SCIFI_TASK: meta.name, SCIFI_TASK_DIR: TASK_MOUNT },
    labels: {
      "scifi.run": runId,
      "scifi.task": meta.name,
      ...(meta.group ? { "scifi.group": meta.group } : {}),
    },
    home: resolve(options.home),
  };
}

/**
 * Who the sandbox runs as: the invoking user's uid:gid (files in the task folder stay theirs), or,
 * when scifi runs as root, the site's unprivileged sandboxUser (never uid 0 in a sandbox).
 */
export function sandboxUser(site: Pick<SitePolicy, "sandboxUser">): { uid: number; gid: number } {
  const uid = process.getuid?.() ?? 0;
  if (uid === 0) return { ...site.sandboxUser };
  return { uid, gid: process.getgid?.() ?? 0 };
}

type Limits = Pick<
  SandboxSpec,
  | "network"
  | "networkRules"
  | "openNetwork"
  | "gpus"
  | "cpus"
  | "memoryBytes"
  | "pidsLimit"
  | "scratch"
  | "walltimeSec"
>;

function resolveLimits(sam: SamDocument, site: SitePolicy, options: ResolveOptions): Limits {
  const meta = sam.metadata;
  const hostCpus = options.hostCpus ?? availableParallelism();
  if (meta.network && !site.allowNetwork) {
    throw new PolicyRefused(
      "network-not-allowed",
      "network",
      "the SAM asks for network access and the site policy does not allow it (allowNetwork: false)",
      "Remove `network: true` from the SAM, or ask the site administrator to allow network.",
    );
  }
  const networkRules = meta.networkHosts?.length ? hostRules(meta.networkHosts, site) : undefined;
  if (meta.gpu > site.maxGpus) {
    throw new PolicyRefused(
      "gpu-over-limit",
      "gpu",
      `the SAM asks for ${meta.gpu} GPU(s) and the site allows at most ${site.maxGpus}`,
      `Ask for at most ${site.maxGpus} (maxGpus in the site policy).`,
    );
  }
  if (meta.gpu > 0) {
    const hostGpus = options.hostGpus ?? hostGpuCount();
    if (meta.gpu > hostGpus) {
      throw new PolicyRefused(
        "gpu-not-on-host",
        "gpu",
        `the SAM asks for ${meta.gpu} GPU(s) and this machine has ${hostGpus === 0 ? "none (no NVIDIA device in /dev)" : hostGpus}`,
        "Run the task on a machine with GPUs (scifi submit places it on a SLURM node), or remove `gpu:` from the SAM; `scifi doctor` shows this host's GPUs.",
      );
    }
  }
  const maxCpus = Math.min(site.maxCpus, hostCpus);
  if (meta.cpus !== undefined && meta.cpus > maxCpus) {
    throw new PolicyRefused(
      "cpus-over-limit",
      "cpus",
      `the SAM asks for ${meta.cpus} CPUs and at most ${maxCpus} are allowed (site maxCpus ${site.maxCpus}, this machine has ${hostCpus})`,
      `Ask for at most ${maxCpus} CPUs.`,
    );
  }
  refuseOver("memory-over-limit", "memory", meta.memoryBytes, site.maxMemoryBytes, formatBytes, "maxMemory");
  refuseOver(
    "walltime-over-limit",
    "walltime",
    meta.walltimeSec,
    site.maxWalltimeSec,
    formatSeconds,
    "maxWalltime",
  );
  refuseOver(
    "scratch-over-limit",
    "scratch",
    meta.scratchBytes,
    site.maxScratchBytes,
    formatBytes,
    "maxScratch",
  );
  return {
    network: meta.network,
    ...(networkRules && !meta.network ? { networkRules } : {}),
    ...(meta.network
      ? {
          openNetwork: {
            rules: {
              allow: ["*"],
              deny: [...site.deniedHosts],
              allowedPrivateRanges: [...site.allowedPrivateRanges],
            },
            apptainerHostNetwork: site.apptainerHostNetwork,
          },
        }
      : {}),
    gpus: meta.gpu,
    cpus: meta.cpus ?? Math.min(site.defaultCpus, maxCpus),
    memoryBytes: meta.memoryBytes ?? Math.min(site.defaultMemoryBytes, site.maxMemoryBytes),
    pidsLimit: site.defaultPids,
    walltimeSec: meta.walltimeSec ?? Math.min(site.defaultWalltimeSec, site.maxWalltimeSec),
    ...(meta.scratchBytes ? { scratch: { target: SCRATCH_TARGET, sizeBytes: meta.scratchBytes } } : {}),
  };
}

/** The proxy's rules for a SAM's host list: each host must be covered by the site's `allowedHosts`. */
function hostRules(hosts: string[], site: SitePolicy): NetworkRules {
  for (const text of hosts) {
    const rule = parseHostRule(text);
    if (!rule)
      throw new PolicyRefused(
        "network-host-not-allowed",
        "network",
        `${text} is not a host`,
        "Write host, *.host or host:port.",
      );
    if (allowedHostsCover(site.allowedHosts, rule)) continue;
    throw new PolicyRefused(
      "network-host-not-allowed",
      "network",
      `the SAM lists ${text} and the site policy's allowedHosts (${site.allowedHosts.join(", ") || "none"}) do not include it`,
      "Remove the host from the SAM's `network` list, or ask the site administrator to add it to allowedHosts.",
    );
  }
  return {
    allow: [...hosts],
    deny: [...site.deniedHosts],
    allowedPrivateRanges: [...site.allowedPrivateRanges],
  };
}

/** Whether the site's `allowedHosts` (`*` alone: any host) let a SAM ask for `rule`. */
export function allowedHostsCover(allowedHosts: readonly string[], rule: HostRule): boolean {
  return allowedHosts.some((h) => {
    if (h === "*") return true;
    const site = parseHostRule(h);
    return site !== undefined && covers(site, rule);
  });
}

/** Whether a site rule allows at least everything a SAM rule asks for (hosts and ports). */
export function covers(site: HostRule, sam: HostRule): boolean {
  const ports = sam.port === undefined ? DEFAULT_PORTS : [sam.port];
  const portOk =
    site.port === undefined
      ? ports.every((p) => DEFAULT_PORTS.includes(p))
      : ports.every((p) => p === site.port);
  if (!portOk) return false;
  if (!site.wildcard) return !sam.wildcard && sam.host === site.host;
  return sam.host === site.host ? sam.wildcard : sam.host.endsWith(`.${site.host}`);
}

function refuseOver(
  rule: "memory-over-limit" | "walltime-over-limit" | "scratch-over-limit",
  key: string,
  asked: number | undefined,
  max: number,
  format: (n: number) => string,
  siteKey: string,
): void {
  if (asked === undefined || asked <= max) return;
  throw new PolicyRefused(
    rule,
    key,
    `the SAM asks for ${key} ${format(asked)} and the site allows at most ${format(max)}`,
    `Ask for at most ${format(max)} (${siteKey} in the site policy).`,
  );
}

function refuseDeniedTaskFolder(taskDir: string, denied: DeniedPath[]): void {
  const hit = deniedOverlap(taskDir, denied, true);
  if (hit) {
    throw new PolicyRefused(
      "task-folder-denied",
      taskDir,
      `the task folder ${hit}, and the whole task folder is mounted read-write`,
      "Move the SAM file into a folder of its own (for example <home>/tasks/<name>/).",
    );
  }
}

/** The SAM file, referenced sub-SAM files and check assets: bound read-only over themselves in /task. */
function taskFileMounts(sam: SamDocument, taskDir: string): MountSpec[] {
  const samDir = dirname(sam.file);
  const wanted: { path: string; reason: string }[] = [
    { path: sam.file, reason: "sam file" },
    ...sam.files
      .filter((f) => resolve(f.file) !== resolve(sam.file))
      .map((f) => ({ path: f.file, reason: "sub-SAM file" })),
    // Hidden assets are out of the task folder while agents run; the check sandbox binds them itself.
    ...sam.metadata.checkAssets
      .filter((a) => !(sam.metadata.hiddenAssets ?? []).includes(a))
      .map((a) => ({ path: resolve(samDir, a), reason: "check asset" })),
  ];
  const seen = new Set<string>();
  const mounts: MountSpec[] = [];
  for (const { path, reason } of wanted) {
    if (!existsSync(path)) {
      throw new PolicyRefused(
        "task-file-missing",
        path,
        `the ${reason} does not exist`,
        "Create it, or fix its path in the SAM (paths are relative to the SAM's folder).",
      );
    }
    const real = realpathSync(path);
    const rel = relative(taskDir, real);
    if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
      const rule = reason === "sam file" ? "sam-file-outside-task" : "task-file-outside-task";
      throw new PolicyRefused(
        rule,
        path,
        `the ${reason} resolves to ${real}, outside the task folder ${taskDir}, so it cannot be shown read-only inside /task`,
        "Keep SAM files and check assets inside the task folder (a symlink out of it is not followed).",
      );
    }
    if (seen.has(real)) continue;
    seen.add(real);
    mounts.push({ source: real, target: posix.join(TASK_MOUNT, ...rel.split("/")), readOnly: true, reason });
  }
  return mounts;
}

function declaredMounts(
  requests: MountRequest[],
  samDir: string,
  site: SitePolicy,
  denied: DeniedPath[],
  taskDir: string,
): MountSpec[] {
  const mounts: MountSpec[] = [];
  for (const request of requests) {
    const where = `mount '${request.host}' -> '${request.container}' (line ${request.line})`;
    checkTarget(request, where, mounts);
    const source = resolveSource(request, samDir, where);
    const hit = deniedOverlap(source, denied) ?? nameHit(source);
    if (hit) {
      throw new PolicyRefused(
        "mount-denied",
        source,
        `${where}: the resolved path ${hit}, which is never mounted`,
        "Mount a folder that holds only the data the task needs.",
      );
    }
    // The sandbox can write the task folder (and any read-write mount): a source in there is the
    // agent's to replace, e.g. by a link to /etc that a later sandbox start would bind.
    const writable = [taskDir, ...mounts.filter((m) => !m.readOnly).map((m) => m.source)].find((w) =>
      overlaps(source, w),
    );
    if (writable !== undefined) {
      throw new PolicyRefused(
        "mount-inside-writable",
        source,
        `${where}: the resolved path ${source === writable ? "is" : "overlaps"} ${writable === taskDir ? "the task folder" : `the read-write mount ${writable}`}, which the sandbox can write, so the agent could swap it for a link to any host path`,
        "Keep the data in the task folder (it is mounted at /task already), or mount a folder outside it.",
      );
    }
    checkRoots(source, site, where);
    if (request.mode === "rw" && !site.allowReadWriteMounts) {
      throw new PolicyRefused(
        "mount-rw-not-allowed",
        source,
        `${where} asks for read-write and the site policy allows only read-only declared mounts (allowReadWriteMounts: false)`,
        "Use mode ro and write results into the task folder, or ask the site administrator.",
      );
    }
    mounts.push({
      source,
      target: request.container,
      readOnly: request.mode !== "rw",
      reason: `declared mount (line ${request.line})`,
    });
  }
  return mounts;
}

function checkTarget(request: MountRequest, where: string, earlier: MountSpec[]): void {
  const target = request.container;
  if (
    !target.startsWith("/") ||
    posix.normalize(target) !== target ||
    (target !== "/" && target.endsWith("/"))
  ) {
    throw new PolicyRefused(
      "mount-target-invalid",
      target,
      `${where}: the container path must be absolute and normalised (no '..', '.', '//' or trailing '/')`,
      "Write it like /data/input.",
    );
  }
  // `/` holds every path, so only a mount AT `/` clashes with it.
  const reserved = RESERVED_TARGETS.find((r) => (r === "/" ? target === "/" : overlaps(target, r)));
  if (reserved !== undefined) {
    throw new PolicyRefused(
      "mount-target-reserved",
      target,
      `${where}: the container path overlaps ${reserved}, which the sandbox itself uses`,
      "Pick a path of its own, like /data/<name> or /inputs/<name>.",
    );
  }
  const clash = earlier.find((m) => overlaps(target, m.target));
  if (clash) {
    throw new PolicyRefused(
      "mount-overlap",
      target,
      `${where}: the container path overlaps ${clash.target} of the ${clash.reason}`,
      "Give each mount its own container path, none inside another.",
    );
  }
}

function resolveSource(request: MountRequest, samDir: string, where: string): string {
  const asked = resolve(samDir, request.host);
  try {
    return realpathSync(asked);
  } catch {
    throw new PolicyRefused(
      "mount-missing",
      asked,
      `${where}: the host path does not exist (or a link on the way is broken)`,
      "Create it or fix the path (relative paths are resolved against the SAM's folder).",
    );
  }
}

function checkRoots(source: string, site: SitePolicy, where: string): void {
  const roots = site.allowedMountRoots.map((r) => (existsSync(r) ? realpathSync(r) : r));
  if (roots.some((root) => source === root || source.startsWith(`${root}/`) || root === "/")) return;
  const have =
    roots.length === 0
      ? "none are configured (the built-in site policy allows no declared mounts)"
      : `allowed: ${roots.join(", ")}`;
  throw new PolicyRefused(
    "mount-outside-roots",
    source,
    `${where}: the resolved path is not under an allowed mount root (${have})`,
    "Add a root that holds it to allowedMountRoots in the site policy, or move the data under an allowed root.",
  );
}

/**
 * Describes the denied path `path` is, contains or lies inside; undefined when it touches none.
 * `taskFolder`: `path` is the task folder, which may lie inside a folder that holds task copies.
 */
function deniedOverlap(path: string, denied: DeniedPath[], taskFolder = false): string | undefined {
  for (const d of denied) {
    if (path === d.path) return `is ${d.why}`;
    if (isInside(d.path, path)) return `contains ${d.why} (${d.path})`;
    if (taskFolder && d.holdsTaskFolders) continue;
    if (d.inside && isInside(path, d.path)) return `lies inside ${d.why} (${d.path})`;
  }
  return undefined;
}

function nameHit(path: string): string | undefined {
  const what = sensitiveByName(path);
  return what ? `is or lies inside ${what}` : undefined;
}

/** Whether `inner` is strictly inside `outer`. */
function isInside(inner: string, outer: string): boolean {
  return outer === "/" ? inner !== "/" : inner.startsWith(`${outer}/`);
}

function overlaps(a: string, b: string): boolean {
  return a === b || isInside(a, b) || isInside(b, a);
}

export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1 && value % 1024 === 0) {
    value /= 1024;
    unit++;
  }
  return `${value} ${units[unit]}`;
}

export function formatSeconds(n: number): string {
  if (n % 3600 === 0) return `${n / 3600}h`;
  if (n % 60 === 0) return `${n / 60}m`;
  return `${n}s`;
}
