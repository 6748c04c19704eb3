// `scifi submit`: place a whole task on the cluster as one SLURM job that runs `scifi run` there.
// The SAM comes parsed by the run's setup (runner/run/setup.ts loadSam), as for every run.
// Writes the batch script and a record under `<home>/submits/<id>/` (never in the task folder),
// submits with `sbatch --parsable`, and returns what it did; --dry-run stops before writing.
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { homePaths } from "../paths.ts";
import type { SamDocument } from "../sam/types.ts";
import { refuseBusyTaskFolder, TaskFolderBusy } from "../task-folder-lock.ts";
import {
  type BackendChoice,
  type PlacementFlags,
  placementOptions,
  renderPlacementScript,
  SUBMISSIONS_DIR,
  type SubmissionRecord,
} from "./placement.ts";
import { loadJobsPolicy } from "./policy.ts";
import { SlurmClient } from "./slurm.ts";

export interface SubmitTaskOptions {
  home: string;
  /** The SAM to place, as parsed (runner/run/setup.ts loadSam). */
  sam: SamDocument;
  flags: PlacementFlags;
  backend: BackendChoice;
  dryRun: boolean;
  /** `scifi run --model` on the node (default: the home's models.yaml there). */
  model?: string;
  slurm?: SlurmClient;
  /** argv that starts scifi on the node (default: this Node and this checkout's bin/scifi.js). */
  scifiCommand?: string[];
  /** scifi's arguments on the node instead of `run <sam>` (placement.ts PlacementScript.command). */
  command?: string[];
  now?: Date;
}

export interface SubmitTaskResult {
  script: string;
  sbatchArgs: string[];
  notes: string[];
  /** Set unless dry run. */
  jobId?: string;
  submitDir: string;
  record?: SubmissionRecord;
}

/** Bad input to `scifi submit` (a placement the SAM, flags or policy do not allow): exit code 2 with this message. */
export class SubmitInputError extends Error {
  override name = "SubmitInputError";
}

export async function submitTask(o: SubmitTaskOptions): Promise<SubmitTaskResult> {
  const sam = o.sam;
  const policy = loadJobsPolicy(homePaths(o.home).sitePolicy);
  let placement: ReturnType<typeof placementOptions>;
  try {
    // The sandbox `scifi run` starts inside the job gets the site's defaults where the SAM is silent.
    const { loadSitePolicy, sitePolicyPath } = await import("../policy/site.ts");
    const site = loadSitePolicy(sitePolicyPath(o.home), false).policy;
    placement = placementOptions(sam.metadata, o.flags, policy, {
      cpus: Math.min(site.defaultCpus, site.maxCpus),
      memoryBytes: Math.min(site.defaultMemoryBytes, site.maxMemoryBytes),
    });
  } catch (error) {
    throw new SubmitInputError(error instanceof Error ? error.message : String(error));
  }
  // The job's `scifi run` would be refused on the node anyway; say so before anything is queued.
  try {
    refuseBusyTaskFolder(o.home, dirname(sam.file));
  } catch (error) {
    if (error instanceof TaskFolderBusy) throw new SubmitInputError(error.message);
    throw error;
  }
  const now = o.now ?? new Date();
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "-");
  const slug = sam.metadata.name.replace(/[^A-Za-z0-9_.-]+/g, "-").slice(0, 40) || "task";
  const submitDir = join(o.home, SUBMISSIONS_DIR, `${stamp}-${slug}-${randomBytes(3).toString("hex")}`);
  let script: string;
  try {
    script = renderPlacementScript({
      sbatchArgs: placement.args,
      samFile: sam.file,
      home: resolve(o.home),
      submitDir,
      scifiCommand: o.scifiCommand ?? defaultScifiCommand(),
      backend: o.backend,
      model: absoluteModel(o.model),
      ...(o.command ? { command: o.command } : {}),
    });
  } catch (error) {
    throw new SubmitInputError(error instanceof Error ? error.message : String(error));
  }
  const result: SubmitTaskResult = { script, sbatchArgs: placement.args, notes: placement.notes, submitDir };
  if (o.dryRun) return result;

  mkdirSync(submitDir, { recursive: true, mode: 0o700 });
  const scriptFile = join(submitDir, "job.sbatch");
  writeFileSync(scriptFile, script, { mode: 0o700 });
  // The user's own scifi runs on the node and needs its model keys: it inherits this environment.
  const jobId = await (o.slurm ?? new SlurmClient()).sbatch([], script, { inheritEnv: true });
  const record: SubmissionRecord = {
    version: 1,
    jobId,
    samFile: sam.file,
    samSha256: sam.sha256,
    name: sam.metadata.name,
    submittedAt: now.toISOString(),
    backend: o.backend,
    sbatchArgs: placement.args,
    script: scriptFile,
    home: resolve(o.home),
    ...(o.model ? { model: absoluteModel(o.model) } : {}),
  };
  writeFileSync(join(submitDir, "submit.json"), `${JSON.stringify(record, null, 2)}\n`);
  return { ...result, jobId, record };
}

/** The job runs in its submission folder: a model file given relative to here must stay findable. */
function absoluteModel(model: string | undefined): string | undefined {
  if (model === undefined) return undefined;
  const scripted = /^(scripted(?:-openai)?):(.+)$/.exec(model);
  if (scripted) return `${scripted[1]}:${resolve(scripted[2] ?? "")}`;
  if (/^replay:/.test(model)) return model;
  return resolve(model);
}

function defaultScifiCommand(): string[] {
  return [process.execPath, resolve(import.meta.dirname, "..", "..", "bin", "scifi.js")];
}

/**
 * A paused run that `scifi submit` placed, resumed where it ran: a new SLURM job with the first
 * job's options (its #SBATCH lines), its backend choice and model, that runs `scifi run --resume
 * <run>` on a compute node; recorded as a submission of its own (`scifi status`, `ctl` find it).
 */
export async function resubmitRun(
  home: string,
  record: SubmissionRecord,
  runId: string,
  options: { slurm?: SlurmClient; scifiCommand?: string[]; now?: Date } = {},
): Promise<SubmissionRecord> {
  // The job's `scifi run --resume` would be refused on the node: say so before anything is queued.
  refuseBusyTaskFolder(home, dirname(record.samFile));
  const now = options.now ?? new Date();
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "-");
  const submitDir = join(home, SUBMISSIONS_DIR, `${stamp}-resume-${randomBytes(3).toString("hex")}`);
  const script = renderPlacementScript({
    sbatchArgs: record.sbatchArgs,
    samFile: record.samFile,
    home: resolve(home),
    submitDir,
    scifiCommand: options.scifiCommand ?? defaultScifiCommand(),
    backend: record.backend,
    command: ["run", "--resume", runId, ...(record.model ? ["--model", record.model] : [])],
  });
  mkdirSync(submitDir, { recursive: true, mode: 0o700 });
  const scriptFile = join(submitDir, "job.sbatch");
  writeFileSync(scriptFile, script, { mode: 0o700 });
  const jobId = await (options.slurm ?? new SlurmClient()).sbatch([], script, { inheritEnv: true });
  const next: SubmissionRecord = { ...record, jobId, submittedAt: now.toISOString(), script: scriptFile };
  writeFileSync(join(submitDir, "submit.json"), `${JSON.stringify(next, null, 2)}\n`);
  return next;
}
