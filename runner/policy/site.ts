// The site policy: what an installation allows at most, and the defaults a SAM gets when it asks for
// nothing. Read from YAML (--site-policy, env SCIFI_SITE_POLICY, or <home>/site-policy.yaml); when no
// file exists the built-in defaults below apply. Validated with zod: unknown keys are errors.
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { homePaths } from "../paths.ts";
import {
  type ApprovalAction,
  isApprovalAction,
  notEnforcedMessage,
  requiredActions,
  unknownActionMessage,
} from "../sam/approval-actions.ts";
import { isCidr, parseHostRule } from "../sam/host-rules.ts";
import { parseDuration, parseSize } from "../sam/units.ts";
import { PolicyRefused } from "./refused.ts";

export interface SitePolicy {
  /** Declared mounts must lie under one of these host folders (realpath). Empty: no declared mounts. */
  allowedMountRoots: string[];
  /** Whether a SAM may ask for a read-write declared mount. */
  allowReadWriteMounts: boolean;
  /** Whether a SAM may ask for unrestricted network access (`network: true`). */
  allowNetwork: boolean;
  /**
   * Hosts a SAM may list (`network: [..]`), reached through the run's proxy: `host`, `*.host`,
   * either with `:port`; `*` alone: any host. A SAM host must be covered by one of these.
   */
  allowedHosts: string[];
  /** Hosts the proxy always refuses, whatever a SAM lists (deny wins). */
  deniedHosts: string[];
  /** Address ranges (CIDR) in the private/loopback/link-local ranges that a listed host may resolve to. */
  allowedPrivateRanges: string[];
  /**
   * Whether `network: true` on Apptainer may use the host's own network. Unprivileged Apptainer has
   * no per-run network, so by default `network: true` there goes through the run's proxy to any
   * public host (HTTP and HTTPS); true gives the sandbox the host's network, every service of the
   * host and its LAN included.
   */
  apptainerHostNetwork: boolean;
  maxGpus: number;
  maxCpus: number;
  maxMemoryBytes: number;
  maxWalltimeSec: number;
  maxScratchBytes: number;
  defaultImage: string;
  defaultCpus: number;
  defaultMemoryBytes: number;
  defaultPids: number;
  defaultWalltimeSec: number;
  /** Extra host paths never mounted, on top of the built-in list. */
  deniedPaths: string[];
  /** uid:gid the sandbox runs as when scifi itself runs as root (never 0). */
  sandboxUser: { uid: number; gid: number };
  /** Most bytes (allocated) a run may add to its task folder. */
  maxTaskFolderBytes: number;
  /** Daemon: GPUs the host has in total (GPU tasks wait for free ones). Absent: `maxGpus`. */
  totalGpus?: number;
  /** Daemon: site-wide limit on the USD all runs may spend per UTC day. Absent: no daily limit. */
  usdPerDay?: number;
  /** Daemon: shell command run after each task ends, with the task's facts in SCIFI_* env vars. */
  onFinish?: string;
  /** Daemon: `local` runs each task in a worker process here; `slurm` places each as a SLURM job. */
  daemonPlacement?: DaemonPlacement;
  /** Actions every task must have approved by a person, on top of the SAM's `approval:` (docs/approval.md). */
  approvalRequired?: ApprovalAction[];
  /** How long a run waits for a decision when its SAM sets no `approval_timeout` (absent: 24h). */
  approvalTimeoutSec?: number;
  /** Shell command run when a run asks for approval, with the request's facts in SCIFI_APPROVAL_* vars. */
  onApproval?: string;
  /** Most tokens (about 4 characters each) of the memory view injected per level (docs/loop.md). */
  memoryTokens: { group: number; global: number };
  /** Whether the pre-scan may add skills from the index to those the SAM lists (default: no). */
  prescanAddsSkills: boolean;
  /** The least critique every task gets (`critique:`; docs/critique.md); absent: the SAM's, else `report`. */
  critique?: "off" | "report" | "approve" | "block";
}

export type DaemonPlacement = "local" | "slurm";

const GiB = 1024 ** 3;

/** Used when no site policy file exists: conservative, and enough for a laptop. */
export const BUILTIN_SITE_POLICY: Readonly<SitePolicy> = Object.freeze({
  allowedMountRoots: [],
  allowReadWriteMounts: false,
  allowNetwork: true,
  allowedHosts: ["*"],
  deniedHosts: [],
  allowedPrivateRanges: [],
  apptainerHostNetwork: false,
  maxGpus: 0,
  maxCpus: 4,
  maxMemoryBytes: 16 * GiB,
  maxWalltimeSec: 24 * 3600,
  maxScratchBytes: 20 * GiB,
  defaultImage: "scifi-sci:local",
  defaultCpus: 2,
  defaultMemoryBytes: 4 * GiB,
  defaultPids: 512,
  defaultWalltimeSec: 3600,
  deniedPaths: [],
  sandboxUser: Object.freeze({ uid: 65534, gid: 65534 }),
  maxTaskFolderBytes: 4 * GiB,
  memoryTokens: Object.freeze({ group: 1500, global: 1000 }),
  prescanAddsSkills: false,
});

const size = z.union([z.number().int().positive(), z.string()]).transform((value, ctx) => {
  const bytes = typeof value === "number" ? value : parseSize(value);
  if (bytes === undefined)
    ctx.addIssue({ code: "custom", message: `'${value}' is not a size like 4GiB or 512M` });
  return bytes ?? 0;
});
const duration = z.union([z.number().int().positive(), z.string()]).transform((value, ctx) => {
  const seconds = typeof value === "number" ? value : parseDuration(value);
  if (seconds === undefined)
    ctx.addIssue({ code: "custom", message: `'${value}' is not a duration like 2h or 90m` });
  return seconds ?? 0;
});
const sandboxUser = z.string().transform((value, ctx) => {
  const match = /^(\d+):(\d+)$/.exec(value.trim());
  const uid = Number(match?.[1]);
  const gid = Number(match?.[2]);
  if (!match || uid <= 0 || gid <= 0 || uid > 2 ** 31 - 1 || gid > 2 ** 31 - 1)
    ctx.addIssue({
      code: "custom",
      message: `'${value}' is not uid:gid with both above 0 (e.g. 65534:65534)`,
    });
  return { uid, gid };
});
const absolutePath = z.string().refine((p) => p.startsWith("/"), "must be an absolute path");

/** The YAML file's schema: every key optional (missing ones take the built-in value), none unknown. */
const fileSchema = z.strictObject({
  allowedMountRoots: z.array(absolutePath).optional(),
  allowReadWriteMounts: z.boolean().optional(),
  allowNetwork: z.boolean().optional(),
  allowedHosts: z
    .array(
      z
        .string()
        .refine((h) => h === "*" || parseHostRule(h) !== undefined, "must be host, *.host, host:port or *"),
    )
    .optional(),
  deniedHosts: z
    .array(z.string().refine((h) => parseHostRule(h) !== undefined, "must be host, *.host or host:port"))
    .optional(),
  allowedPrivateRanges: z
    .array(z.string().refine(isCidr, "must be an address range like 10.1.0.0/16"))
    .optional(),
  apptainerHostNetwork: z.boolean().optional(),
  maxGpus: z.number().int().min(0).optional(),
  maxCpus: z.number().positive().optional(),
  maxMemory: size.optional(),
  maxWalltime: duration.optional(),
  maxScratch: size.optional(),
  defaultImage: z.string().min(1).optional(),
  defaultCpus: z.number().positive().optional(),
  defaultMemory: size.optional(),
  defaultPids: z.number().int().min(16).optional(),
  defaultWalltime: duration.optional(),
  deniedPaths: z.array(absolutePath).optional(),
  sandboxUser: sandboxUser.optional(),
  maxTaskFolder: size.optional(),
  totalGpus: z.number().int().min(0).optional(),
  usdPerDay: z.number().positive().optional(),
  onFinish: z.string().min(1).optional(),
  daemon: z
    .strictObject({
      placement: z.enum(["local", "slurm"], { error: "must be local or slurm" }).optional(),
    })
    .optional(),
  memory: z
    .strictObject({
      groupTokens: z.number().int().min(0).optional(),
      globalTokens: z.number().int().min(0).optional(),
    })
    .optional(),
  prescanAddsSkills: z.boolean().optional(),
  critique: z
    .enum(["off", "report", "approve", "block"], { error: "must be off, report, approve or block" })
    .optional(),
  approval: z
    .strictObject({
      require: z
        .array(
          z
            .string()
            .refine(isApprovalAction, { error: (issue) => unknownActionMessage(String(issue.input)) })
            .refine((name) => !notEnforcedMessage(name as ApprovalAction), {
              error: (issue) => notEnforcedMessage(issue.input as ApprovalAction) ?? "",
            }),
        )
        .optional(),
      timeout: duration.optional(),
      onApproval: z.string().min(1).optional(),
    })
    .optional(),
  /** SLURM grants for agents' jobs: validated by runner/jobs/policy.ts, which owns that section. */
  jobs: z.unknown().optional(),
});

/** Which file the site policy comes from: flag, then env SCIFI_SITE_POLICY, then `<home>/site-policy.yaml`. */
export function sitePolicyPath(home: string, flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return resolve(flag);
  if (env.SCIFI_SITE_POLICY) return resolve(env.SCIFI_SITE_POLICY);
  return homePaths(home).sitePolicy;
}

export interface LoadedSitePolicy {
  policy: SitePolicy;
  /** The file read, or undefined when the built-in defaults apply. */
  source: string | undefined;
}

/**
 * Loads the site policy. A path given explicitly (flag or env) must exist; the default path may be
 * absent, and then the built-in defaults apply.
 */
export function loadSitePolicy(path: string, required: boolean): LoadedSitePolicy {
  if (!existsSync(path)) {
    if (required) {
      throw new PolicyRefused(
        "site-policy-invalid",
        path,
        "the site policy file does not exist",
        "Check the path given with --site-policy or SCIFI_SITE_POLICY.",
      );
    }
    return { policy: { ...BUILTIN_SITE_POLICY }, source: undefined };
  }
  return { policy: parseSitePolicy(readFileSync(path, "utf8"), path), source: path };
}

/** Parses site policy YAML text; errors name the file, the key and the expected form. */
export function parseSitePolicy(text: string, file: string): SitePolicy {
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (error) {
    throw invalid(
      file,
      `it is not valid YAML (${error instanceof Error ? error.message.split("\n")[0] : String(error)})`,
    );
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(top level)"}: ${i.message}`);
    throw invalid(file, problems.join("; "));
  }
  const f = parsed.data;
  const b = BUILTIN_SITE_POLICY;
  return {
    allowedMountRoots: f.allowedMountRoots ?? [...b.allowedMountRoots],
    allowReadWriteMounts: f.allowReadWriteMounts ?? b.allowReadWriteMounts,
    allowNetwork: f.allowNetwork ?? b.allowNetwork,
    allowedHosts: (f.allowedHosts ?? [...b.allowedHosts]).map((h) => h.toLowerCase()),
    deniedHosts: (f.deniedHosts ?? [...b.deniedHosts]).map((h) => h.toLowerCase()),
    allowedPrivateRanges: f.allowedPrivateRanges ?? [...b.allowedPrivateRanges],
    apptainerHostNetwork: f.apptainerHostNetwork ?? b.apptainerHostNetwork,
    maxGpus: f.maxGpus ?? b.maxGpus,
    maxCpus: f.maxCpus ?? b.maxCpus,
    maxMemoryBytes: f.maxMemory ?? b.maxMemoryBytes,
    maxWalltimeSec: f.maxWalltime ?? b.maxWalltimeSec,
    maxScratchBytes: f.maxScratch ?? b.maxScratchBytes,
    defaultImage: f.defaultImage ?? b.defaultImage,
    defaultCpus: f.defaultCpus ?? b.defaultCpus,
    defaultMemoryBytes: f.defaultMemory ?? b.defaultMemoryBytes,
    defaultPids: f.defaultPids ?? b.defaultPids,
    defaultWalltimeSec: f.defaultWalltime ?? b.defaultWalltimeSec,
    deniedPaths: f.deniedPaths ?? [...b.deniedPaths],
    sandboxUser: f.sandboxUser ?? { ...b.sandboxUser },
    maxTaskFolderBytes: f.maxTaskFolder ?? b.maxTaskFolderBytes,
    memoryTokens: {
      group: f.memory?.groupTokens ?? b.memoryTokens.group,
      global: f.memory?.globalTokens ?? b.memoryTokens.global,
    },
    prescanAddsSkills: f.prescanAddsSkills ?? b.prescanAddsSkills,
    ...(f.critique !== undefined ? { critique: f.critique } : {}),
    ...(f.totalGpus !== undefined ? { totalGpus: f.totalGpus } : {}),
    ...(f.usdPerDay !== undefined ? { usdPerDay: f.usdPerDay } : {}),
    ...(f.onFinish !== undefined ? { onFinish: f.onFinish } : {}),
    ...(f.daemon?.placement !== undefined ? { daemonPlacement: f.daemon.placement } : {}),
    ...(f.approval?.require?.length ? { approvalRequired: requiredActions([], f.approval.require) } : {}),
    ...(f.approval?.timeout !== undefined ? { approvalTimeoutSec: f.approval.timeout } : {}),
    ...(f.approval?.onApproval !== undefined ? { onApproval: f.approval.onApproval } : {}),
  };
}

function invalid(file: string, what: string): PolicyRefused {
  return new PolicyRefused(
    "site-policy-invalid",
    file,
    what,
    "Fix the file (keys and forms are listed in docs/sandbox.md and site-policy.example.yaml).",
  );
}
