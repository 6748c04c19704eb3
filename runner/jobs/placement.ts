// Task placement: `scifi submit` runs a whole task as one SLURM job that calls `scifi run` on the
// compute node. Pure mapping from the SAM (and CLI defaults) to sbatch options, the batch script,
// the submission record, and the status lookup `scifi status` uses (squeue, scontrol, run state).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { runFiles } from "../paths.ts";
import type { SamMetadata } from "../sam/types.ts";
// terminal-text's quoting: a path with a line break is one `$'...'` word on one line of the script.
import { shellQuote, visible } from "../terminal-text.ts";
import { slurmFilePattern } from "./batch-script.ts";
import type { JobsPolicy } from "./policy.ts";
import { LIVE_STATES, type SlurmClient, type SlurmJobInfo } from "./slurm.ts";
import {
  describeBytes,
  formatSlurmMemory,
  formatSlurmTime,
  parseSlurmMemory,
  parseSlurmTime,
} from "./units.ts";

/** Time the job gets beyond the SAM's walltime, for scifi itself (image start, checks, records). */
export const PLACEMENT_TIME_MARGIN_SEC = 300;
/** Memory the job gets beyond the SAM's memory limit, for scifi's own process and the engine. */
export const PLACEMENT_MEMORY_MARGIN_BYTES = 1024 ** 3;

/** `scifi submit` flags: defaults where the SAM says nothing. */
export interface PlacementFlags {
  partition?: string;
  time?: string;
  gres?: string;
  mem?: string;
  cpusPerTask?: number;
  account?: string;
}

export interface PlacementOptions {
  /** sbatch options, in a fixed order. */
  args: string[];
  /** Where a value came from or was capped, one line each (printed by `scifi submit`). */
  notes: string[];
}

/**
 * Maps the SAM's limits to sbatch options. The SAM's walltime, gpu, cpus and memory win over the
 * flags (which are defaults); the site policy caps both. Throws on unreadable flag values.
 */
export function placementOptions(
  sam: SamMetadata,
  flags: PlacementFlags,
  policy: JobsPolicy,
  /**
   * What the sandbox inside the job is given when the SAM says nothing (the site policy's
   * defaultCpus and defaultMemory): the job asks for at least that, so the sandbox fits in it.
   */
  sandbox?: { cpus: number; memoryBytes: number },
): PlacementOptions {
  const notes: string[] = [];
  const pick = <T>(what: string, fromSam: T | undefined, fromFlag: T | undefined, fallback: T): T => {
    if (fromSam !== undefined) {
      if (fromFlag !== undefined) notes.push(`${what}: the SAM's value wins over the flag`);
      return fromSam;
    }
    return fromFlag ?? fallback;
  };
  const cap = (what: string, value: number, max: number, show: (n: number) => string): number => {
    if (value <= max) return value;
    notes.push(`${what}: ${show(value)} capped to ${show(max)} by the site policy`);
    return max;
  };

  const flagTime = flags.time === undefined ? undefined : parseFlag("--time", flags.time, parseSlurmTime);
  const samTime = sam.walltimeSec === undefined ? undefined : sam.walltimeSec + PLACEMENT_TIME_MARGIN_SEC;
  const timeSec = cap(
    "time",
    pick("time", samTime, flagTime, policy.defaultTimeSec),
    policy.maxTimeSec,
    formatSlurmTime,
  );

  const flagMem = flags.mem === undefined ? undefined : parseFlag("--mem", flags.mem, parseSlurmMemory);
  const samMem = sam.memoryBytes === undefined ? undefined : sam.memoryBytes + PLACEMENT_MEMORY_MARGIN_BYTES;
  const memBytes = cap(
    "memory",
    pick(
      "memory",
      samMem,
      flagMem,
      sandbox
        ? Math.max(policy.defaultMemoryBytes, sandbox.memoryBytes + PLACEMENT_MEMORY_MARGIN_BYTES)
        : policy.defaultMemoryBytes,
    ),
    policy.maxMemoryBytes,
    describeBytes,
  );

  const samCpus = sam.cpus === undefined ? undefined : Math.ceil(sam.cpus);
  const cpus = cap(
    "cpus",
    pick(
      "cpus",
      samCpus,
      flags.cpusPerTask,
      sandbox ? Math.max(policy.defaultCpus, Math.ceil(sandbox.cpus)) : policy.defaultCpus,
    ),
    policy.maxCpus,
    String,
  );

  const args = [
    `--job-name=scifi-${sam.name.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40)}`,
    "--nodes=1",
    "--ntasks=1",
    `--time=${formatSlurmTime(timeSec)}`,
    `--cpus-per-task=${cpus}`,
    `--mem=${formatSlurmMemory(memBytes)}`,
  ];
  const gres = gresFor(sam, flags, policy, notes);
  if (gres) args.push(`--gres=${gres}`);
  const partition = flags.partition ?? policy.partition;
  if (partition) args.push(`--partition=${partition}`);
  const account = flags.account ?? policy.account;
  if (account) args.push(`--account=${account}`);
  return { args, notes };
}

/** The SAM's `gpu: N` wins; with no GPU in the SAM a `--gres` flag passes through (GPU counts capped). */
function gresFor(
  sam: SamMetadata,
  flags: PlacementFlags,
  policy: JobsPolicy,
  notes: string[],
): string | undefined {
  if (sam.gpu > 0) {
    if (flags.gres !== undefined) notes.push("gres: the SAM's gpu wins over the flag");
    const gpus = Math.min(sam.gpu, policy.maxGpus);
    if (gpus < sam.gpu) notes.push(`gpus: ${sam.gpu} capped to ${gpus} by the site policy`);
    return gpus > 0 ? `gpu:${gpus}` : undefined;
  }
  if (flags.gres === undefined) return undefined;
  const gpu = /^gpu(?::[^:,]+)?:(\d+)$/.exec(flags.gres);
  if (gpu && Number(gpu[1]) > policy.maxGpus) {
    throw new Error(`--gres ${flags.gres}: the site policy allows at most ${policy.maxGpus} GPU(s)`);
  }
  return flags.gres;
}

function parseFlag(flag: string, value: string, parse: (v: string) => number | undefined): number {
  const n = parse(value);
  if (n === undefined) {
    const form = flag === "--time" ? "minutes, M:S, H:M:S or D-H:M:S" : "a size like 512M or 4G";
    throw new Error(`${flag} '${value}' is not valid: use ${form}`);
  }
  return n;
}

export type BackendChoice = "auto" | "docker" | "apptainer";

export interface PlacementScript {
  sbatchArgs: string[];
  /** Absolute path of the SAM file. */
  samFile: string;
  /** scifi home on the shared file system. */
  home: string;
  /** The submission folder: the job's working directory and where its log goes. */
  submitDir: string;
  /** argv that starts scifi on the node, e.g. [node, /path/bin/scifi.js]. */
  scifiCommand: string[];
  backend: BackendChoice;
  /** `--model` for `scifi run` (absolute paths), when not the home's models.yaml. */
  model?: string;
  /**
   * scifi's arguments on the node instead of `run <sam> --model M` (`scifi eval` runs one trial
   * per job: `eval trial <eval> <trial>`); `--backend "$backend"` is appended either way.
   */
  command?: string[];
}

/**
 * A path as an `#SBATCH` value: in double quotes, which sbatch reads as one value (a home under
 * "My Runs" would split at its space, "Invalid directive"). A quote, a backslash or a control
 * character cannot be quoted there: refused, naming the path, before anything is written.
 */
export function directiveValue(path: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/["\\\x00-\x1f\x7f]/.test(path))
    throw new Error(
      `the path ${JSON.stringify(path)} holds a quote, a backslash or a control character, which a SLURM batch script's #SBATCH line cannot carry: use a scifi home (SCIFI_HOME) without one`,
    );
  return `"${path}"`;
}

/** The batch script of a placed task (self-describing: its #SBATCH lines are the options used). */
export function renderPlacementScript(p: PlacementScript): string {
  const backendLines =
    p.backend === "auto"
      ? [
          "# Docker where this node has an engine, else Apptainer.",
          "if docker info >/dev/null 2>&1; then backend=docker; else backend=apptainer; fi",
        ]
      : [`backend=${p.backend}`];
  return [
    "#!/bin/bash",
    // The SAM's path may hold a newline (a folder dropped into the daemon's inbox): one visible
    // line, so no part of it leaves the comment and runs as a command of this script.
    `# Written by 'scifi submit' for ${visible(p.samFile)}`,
    ...p.sbatchArgs.map((a) => `#SBATCH ${a}`),
    `#SBATCH --chdir=${directiveValue(p.submitDir)}`,
    `#SBATCH --output=${directiveValue(slurmFilePattern(join(p.submitDir, "slurm-%j.out")))}`,
    "set -euo pipefail",
    `export SCIFI_HOME=${shellQuote(p.home)}`,
    ...backendLines,
    'echo "scifi submit: job ${SLURM_JOB_ID:-?} on $(hostname), backend $backend"',
    p.command
      ? `exec ${[...p.scifiCommand, ...p.command].map(shellQuote).join(" ")} --backend "$backend"`
      : `exec ${p.scifiCommand.map(shellQuote).join(" ")} run ${shellQuote(p.samFile)} --backend "$backend"${p.model ? ` --model ${shellQuote(p.model)}` : ""}`,
    "",
  ].join("\n");
}

/** The record `scifi submit` writes to `<submitDir>/submit.json`. */
export interface SubmissionRecord {
  version: 1;
  jobId: string;
  samFile: string;
  samSha256: string;
  name: string;
  submittedAt: string;
  backend: BackendChoice;
  sbatchArgs: string[];
  script: string;
  home: string;
  model?: string;
}

export const SUBMISSIONS_DIR = "submits";

/** Every submission record under `<home>/submits/`, newest first. */
export function listSubmissions(home: string): SubmissionRecord[] {
  const dir = join(home, SUBMISSIONS_DIR);
  if (!existsSync(dir)) return [];
  const records: SubmissionRecord[] = [];
  for (const entry of readdirSync(dir)) {
    const file = join(dir, entry, "submit.json");
    if (existsSync(file)) records.push(JSON.parse(readFileSync(file, "utf8")) as SubmissionRecord);
  }
  return records.sort((a, b) => b.submittedAt.localeCompare(a.submittedAt));
}

export interface PlacementStatus {
  jobId: string;
  /** SLURM's state while the controller knows the job; undefined once it forgot it. */
  slurm?: SlurmJobInfo;
  /** The run `scifi run` started on the node, once it wrote its state file. */
  run?: { runId: string; phase: string; outcome?: { status: string; reason: string } };
  /** One word for a table: SLURM's state while live, else the run's outcome, else SLURM's last word. */
  summary: string;
}

/** Status of a placed task: squeue while live, `scontrol show job`, then the run's own state file. */
export async function placementStatus(
  home: string,
  record: SubmissionRecord,
  slurm: SlurmClient,
): Promise<PlacementStatus> {
  const info = await slurm.jobInfo(record.jobId).catch(() => undefined);
  const run = findRunState(home, record);
  let summary = info?.state ?? "UNKNOWN";
  if (!(info && LIVE_STATES.has(info.state)) && run?.outcome) summary = run.outcome.status.toUpperCase();
  return { jobId: record.jobId, slurm: info, run, summary };
}

/** The newest run of the record's SAM that started after the submission (its state.json). */
export function findRunState(home: string, record: SubmissionRecord): PlacementStatus["run"] {
  const runsDir = join(home, "runs");
  if (!existsSync(runsDir)) return undefined;
  const submitted = Date.parse(record.submittedAt);
  let best: { mtime: number; run: NonNullable<PlacementStatus["run"]> } | undefined;
  for (const runId of readdirSync(runsDir)) {
    const file = runFiles(join(runsDir, runId)).state;
    if (!existsSync(file)) continue;
    const mtime = statSync(file).mtimeMs;
    if (mtime < submitted) continue;
    const state = JSON.parse(readFileSync(file, "utf8")) as {
      samFile?: string;
      phase?: string;
      outcome?: { status: string; reason: string };
    };
    if (state.samFile !== record.samFile) continue;
    if (!best || mtime > best.mtime) {
      best = { mtime, run: { runId, phase: state.phase ?? "unknown", outcome: state.outcome } };
    }
  }
  return best?.run;
}
