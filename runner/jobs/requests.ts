// What a job request must be before the broker submits it: the script read as a task-folder file
// (no link followed, capped), the resources within the task's grant as whole numbers, the paths and
// the job name in the forms SLURM takes. Pure checks; each refusal is a JobRefused with its rule.
import { realpathSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { HostPathRefused, readTaskFile } from "../policy/host-paths.ts";
import { JobRefused } from "./errors.ts";
import type { JobGrant } from "./policy.ts";
import { describeBytes, formatSlurmTime, parseSlurmMemory, parseSlurmTime } from "./units.ts";

/** Where the task folder appears inside the sandbox; agents name scripts by either path. */
export const CONTAINER_TASK_DIR = "/task";

export interface SubmitRequest {
  /** The batch script, relative to the task folder (or `/task/...`). */
  script: string;
  /** Arguments passed to the script. */
  args?: string[];
  /** Job name (letters, digits, `._-`); default: the script's file name. */
  name?: string;
  /** SLURM time (`30`, `10:00`, `1:00:00`) or minutes; default: the task's whole time grant. */
  time?: string | number;
  cpus?: number;
  /** Memory like `512M`, `4G` (a number is MiB); default: the task's memory grant. */
  memory?: string | number;
  gpus?: number;
}

/** A batch script larger than this is refused. */
const MAX_SCRIPT_BYTES = 1024 * 1024;

export function readScript(script: { relative: string }, taskDir: string, requested: string): string {
  try {
    return readTaskFile(realpathSync(taskDir), script.relative, requested, MAX_SCRIPT_BYTES).toString("utf8");
  } catch (error) {
    if (error instanceof HostPathRefused)
      throw new JobRefused("script-not-file", `script '${requested}'`, error.reason);
    throw error;
  }
}

export interface ValidResources {
  timeSec: number;
  cpus: number;
  memoryBytes: number;
  gpus: number;
}

/** Checks the requested resources against the grant; absent values take the grant's. */
export function validateResources(request: SubmitRequest, grant: JobGrant): ValidResources {
  const timeSec = parsedOrRefused(
    request.time === undefined ? grant.timeSec : parseSlurmTime(request.time),
    `time '${request.time}'`,
    "time must be minutes or SLURM's M:S, H:M:S, D-H:M:S",
  );
  if (timeSec > grant.timeSec) {
    throw new JobRefused(
      "time-above-grant",
      `time ${formatSlurmTime(timeSec)}`,
      `the task is granted at most ${formatSlurmTime(grant.timeSec)} per job (its walltime, capped by the site)`,
      "Ask for less time or split the work into shorter jobs",
    );
  }
  const gpus = wholeNumberOrRefused("gpus", request.gpus ?? 0, 0);
  if (gpus > grant.gpus) {
    throw new JobRefused(
      "gpus-above-grant",
      `${gpus} GPU(s)`,
      `the task is granted ${grant.gpus} GPU(s)`,
      grant.gpus === 0 ? "Run on CPUs, or the SAM must request `gpu`" : "Ask for fewer GPUs",
    );
  }
  const cpus = wholeNumberOrRefused("cpus", request.cpus ?? Math.min(1, grant.cpus), 1);
  if (cpus > grant.cpus) {
    throw new JobRefused(
      "cpus-above-grant",
      `${cpus} CPU(s)`,
      `the task is granted ${grant.cpus} CPU(s) per job`,
    );
  }
  const memoryBytes = parsedOrRefused(
    request.memory === undefined ? grant.memoryBytes : parseSlurmMemory(request.memory),
    `memory '${request.memory}'`,
    "memory must look like 512M or 4G (a number is MiB)",
  );
  if (memoryBytes > grant.memoryBytes) {
    throw new JobRefused(
      "memory-above-grant",
      `${describeBytes(memoryBytes)} memory`,
      `the task is granted ${describeBytes(grant.memoryBytes)} per job`,
    );
  }
  return { timeSec, cpus, memoryBytes, gpus };
}

/** A parsed request value, or a bad-request refusal naming what was asked and the accepted form. */
function parsedOrRefused(value: number | undefined, asked: string, rule: string): number {
  if (value === undefined) throw new JobRefused("bad-request", asked, rule);
  return value;
}

/** A count that must be a whole number of at least `min`, or a bad-request refusal. */
function wholeNumberOrRefused(what: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min)
    throw new JobRefused("bad-request", `${what} ${value}`, `${what} must be a whole number >= ${min}`);
  return value;
}

/** Maps a script path as the agent wrote it (task-relative, `/task/...`, or host-absolute) to the host. */
export function toHostPath(path: string, taskDir: string): string | undefined {
  if (path === CONTAINER_TASK_DIR || path.startsWith(`${CONTAINER_TASK_DIR}/`)) {
    return resolve(taskDir, `.${path.slice(CONTAINER_TASK_DIR.length)}`);
  }
  return isAbsolute(path) ? resolve(path) : resolve(taskDir, path);
}

/** A safe job name: letters, digits and `._-`, at most 40 characters. */
export function jobName(raw: string): string {
  const cleaned = raw
    .replace(/\.(sh|bash|sbatch|slurm)$/, "")
    .replace(/[^A-Za-z0-9_.-]/g, "_")
    .slice(0, 40);
  return cleaned.replace(/^[._-]+/, "") || "job";
}
