// What the site allows for SLURM jobs (the `jobs:` section of site-policy.yaml) and what one task is
// granted: the SAM asks (`jobs: slurm`, walltime, gpu, cpus, memory), the site policy caps.
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import type { SamMetadata } from "../sam/types.ts";
import { parseDuration, parseSize } from "../sam/units.ts";
import { JobRefused } from "./errors.ts";
import { describeBytes, formatSlurmTime, parseSlurmMemory, parseSlurmTime } from "./units.ts";

export interface JobsPolicy {
  /** The site lets agents submit jobs at all (a SAM must still ask with `jobs: slurm`). */
  enabled: boolean;
  /** Jobs of one task that may be pending or running at once. */
  maxConcurrentJobs: number;
  /** Jobs one task may submit over its whole run. */
  maxTotalJobs: number;
  /** Site cap on one job's time limit, and on a placed task's (`scifi submit`). */
  maxTimeSec: number;
  /** A task's job time grant when its SAM sets no walltime. */
  defaultTimeSec: number;
  maxGpus: number;
  maxCpus: number;
  /** A job's CPU grant when the SAM sets no `cpus`. */
  defaultCpus: number;
  maxMemoryBytes: number;
  /** A job's memory grant when the SAM sets no `memory`. */
  defaultMemoryBytes: number;
  /** Partition and account every job is submitted to (none: the cluster's default). */
  partition?: string;
  account?: string;
  /** Most bytes job_output returns in one call. */
  outputCapBytes: number;
  /**
   * Where agent job scripts run on the node: in the task's container (`auto`: Docker where the node
   * has an engine, else Apptainer), or `none`: directly as the user, outside any sandbox.
   */
  sandbox: JobSandboxEngine;
  /** Folder of SIF files for Apptainer jobs (default env SCIFI_SIF_CACHE, else /var/cache/scifi/sif). */
  sifDir?: string;
}

export type JobSandboxEngine = "auto" | "docker" | "apptainer" | "none";

export const DEFAULT_JOBS_POLICY: JobsPolicy = {
  enabled: true,
  maxConcurrentJobs: 4,
  maxTotalJobs: 20,
  maxTimeSec: 24 * 3600,
  defaultTimeSec: 3600,
  maxGpus: 8,
  maxCpus: 64,
  defaultCpus: 1,
  maxMemoryBytes: 256 * 1024 ** 3,
  defaultMemoryBytes: 2 * 1024 ** 3,
  outputCapBytes: 64 * 1024,
  sandbox: "auto",
};

// Durations as elsewhere in the site policy (`2h`, `90m`) or in SLURM's notation (`1:30:00`, `90`).
const jobTime = z
  .union([z.string(), z.number()])
  .transform(
    (v, ctx) =>
      (typeof v === "string" ? parseDuration(v) : undefined) ??
      parseSlurmTime(v) ??
      invalid(ctx, `'${v}' is not a duration (e.g. 2h, 90m, 1:30:00, 1-00:00:00)`),
  );
// Sizes as elsewhere in the site policy (`4G`, `512Mi`) or as sbatch --mem (a bare number is MiB).
const jobMemory = z
  .union([z.string(), z.number()])
  .transform(
    (v, ctx) =>
      (typeof v === "string" ? parseSize(v) : undefined) ??
      parseSlurmMemory(v) ??
      invalid(ctx, `'${v}' is not a size (e.g. 512M, 4G)`),
  );
const count = z.number().int().nonnegative();

function invalid(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: "custom", message });
  return z.NEVER;
}

/** The `jobs:` section of site-policy.yaml (camelCase keys, as the rest of that file). */
export const jobsPolicySchema = z
  .strictObject({
    enabled: z.boolean().optional(),
    maxConcurrentJobs: count.optional(),
    maxTotalJobs: count.optional(),
    maxTime: jobTime.optional(),
    defaultTime: jobTime.optional(),
    maxGpus: count.optional(),
    maxCpus: count.optional(),
    defaultCpus: count.optional(),
    maxMemory: jobMemory.optional(),
    defaultMemory: jobMemory.optional(),
    partition: z.string().min(1).optional(),
    account: z.string().min(1).optional(),
    outputCap: jobMemory.optional(),
    sandbox: z
      .enum(["auto", "docker", "apptainer", "none"], {
        error: "must be one of: auto, docker, apptainer, none",
      })
      .optional(),
    sifDir: z.string().startsWith("/", "must be an absolute path").optional(),
  })
  .transform(
    (p): JobsPolicy => ({
      enabled: p.enabled ?? DEFAULT_JOBS_POLICY.enabled,
      maxConcurrentJobs: p.maxConcurrentJobs ?? DEFAULT_JOBS_POLICY.maxConcurrentJobs,
      maxTotalJobs: p.maxTotalJobs ?? DEFAULT_JOBS_POLICY.maxTotalJobs,
      maxTimeSec: p.maxTime ?? DEFAULT_JOBS_POLICY.maxTimeSec,
      defaultTimeSec: p.defaultTime ?? DEFAULT_JOBS_POLICY.defaultTimeSec,
      maxGpus: p.maxGpus ?? DEFAULT_JOBS_POLICY.maxGpus,
      maxCpus: p.maxCpus ?? DEFAULT_JOBS_POLICY.maxCpus,
      defaultCpus: p.defaultCpus ?? DEFAULT_JOBS_POLICY.defaultCpus,
      maxMemoryBytes: p.maxMemory ?? DEFAULT_JOBS_POLICY.maxMemoryBytes,
      defaultMemoryBytes: p.defaultMemory ?? DEFAULT_JOBS_POLICY.defaultMemoryBytes,
      partition: p.partition,
      account: p.account,
      outputCapBytes: p.outputCap ?? DEFAULT_JOBS_POLICY.outputCapBytes,
      sandbox: p.sandbox ?? DEFAULT_JOBS_POLICY.sandbox,
      sifDir: p.sifDir,
    }),
  );

/**
 * Reads the `jobs:` section of a site policy file. A missing file or section gives the defaults;
 * a bad section throws with the file and each problem, so a site typo never silently widens a grant.
 */
export function loadJobsPolicy(sitePolicyFile: string): JobsPolicy {
  let text: string;
  try {
    text = readFileSync(sitePolicyFile, "utf8");
  } catch {
    return { ...DEFAULT_JOBS_POLICY };
  }
  const doc = (parseYaml(text) ?? {}) as Record<string, unknown>;
  if (doc.jobs === undefined) return { ...DEFAULT_JOBS_POLICY };
  const parsed = jobsPolicySchema.safeParse(doc.jobs);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  jobs.${i.path.join(".")}: ${i.message}`).join("\n");
    throw new Error(`${sitePolicyFile}: invalid 'jobs' section:\n${problems}`);
  }
  return parsed.data;
}

/** What one task may use for its SLURM jobs: the SAM's request capped by the site. */
export interface JobGrant {
  timeSec: number;
  gpus: number;
  cpus: number;
  memoryBytes: number;
  maxConcurrentJobs: number;
  maxTotalJobs: number;
  partition?: string;
  account?: string;
  outputCapBytes: number;
}

/** The task's job grant, or the refusal that explains why it has none. */
export function jobGrant(sam: SamMetadata, policy: JobsPolicy): JobGrant | JobRefused {
  if (sam.jobs !== "slurm") {
    return new JobRefused(
      "jobs-not-granted",
      "to use SLURM jobs",
      `the SAM '${sam.name}' does not request them`,
      "Add `jobs: slurm` to the SAM's front matter",
    );
  }
  if (!policy.enabled) {
    return new JobRefused(
      "jobs-disabled-by-site",
      "to use SLURM jobs",
      "the site policy disables agent jobs (jobs: enabled: false)",
      "Ask the site administrator",
    );
  }
  return {
    timeSec: Math.min(sam.walltimeSec ?? policy.defaultTimeSec, policy.maxTimeSec),
    gpus: Math.min(sam.gpu, policy.maxGpus),
    cpus: Math.min(sam.cpus ?? policy.defaultCpus, policy.maxCpus),
    memoryBytes: Math.min(sam.memoryBytes ?? policy.defaultMemoryBytes, policy.maxMemoryBytes),
    maxConcurrentJobs: policy.maxConcurrentJobs,
    maxTotalJobs: policy.maxTotalJobs,
    partition: policy.partition,
    account: policy.account,
    outputCapBytes: policy.outputCapBytes,
  };
}

/** One line describing a grant, for tool results and refusals. */
export function describeGrant(g: JobGrant): string {
  return `time ${formatSlurmTime(g.timeSec)}, ${g.gpus} GPU(s), ${g.cpus} CPU(s), ${describeBytes(g.memoryBytes)} memory, ${g.maxConcurrentJobs} concurrent / ${g.maxTotalJobs} total jobs`;
}
