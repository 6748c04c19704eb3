// The batch scripts scifi hands to sbatch. Pure functions: the same inputs give the same text.
// The broker never submits the agent's file itself: it submits a script it wrote, whose only
// directives are the granted ones (so `#SBATCH` lines in the agent's file cannot widen a grant),
// and which runs a frozen copy of the agent's file (so it cannot be swapped after validation).
import { describeBytes, formatSlurmMemory, formatSlurmTime } from "./units.ts";

/** Resources and placement of one job, already within the grant. */
export interface SbatchResources {
  jobName: string;
  timeSec: number;
  cpus: number;
  memoryBytes: number;
  gpus: number;
  partition?: string;
  account?: string;
}

/** sbatch options for resources, in a fixed order (tested with exact outputs). */
export function resourceArgs(r: SbatchResources): string[] {
  const args = [
    `--job-name=${r.jobName}`,
    "--nodes=1",
    "--ntasks=1",
    `--time=${formatSlurmTime(r.timeSec)}`,
    `--cpus-per-task=${r.cpus}`,
    `--mem=${formatSlurmMemory(r.memoryBytes)}`,
  ];
  if (r.gpus > 0) args.push(`--gres=gpu:${r.gpus}`);
  if (r.partition) args.push(`--partition=${r.partition}`);
  if (r.account) args.push(`--account=${r.account}`);
  return args;
}

export interface AgentJobScript {
  resources: SbatchResources;
  runId: string;
  /** Host task folder: the job's working directory. */
  taskDir: string;
  /** Absolute host paths of the job's stdout and stderr files (in the task folder). */
  stdoutPath: string;
  stderrPath: string;
  /** The frozen copy of the agent's script (in the run folder, out of the agent's reach). */
  scriptCopy: string;
  /** The script as the agent named it, relative to the task folder (for the header comment). */
  scriptName: string;
  args: string[];
}

/** sbatch options of an agent job: the grant-checked resources plus where it runs and writes. */
export function agentJobArgs(j: AgentJobScript): string[] {
  return [
    ...resourceArgs(j.resources),
    `--chdir=${j.taskDir}`,
    `--output=${j.stdoutPath}`,
    `--error=${j.stderrPath}`,
    // Only SLURM_* variables and the user's login environment: nothing from scifi's process.
    "--export=NONE",
    `--comment=scifi-run:${j.runId}`,
  ];
}

/** The batch script text of an agent job: directives come from the command line, never this text. */
export function renderAgentJobScript(j: AgentJobScript): string {
  return [
    "#!/bin/bash",
    `# Written by scifi's job broker for run ${j.runId}: runs the task's ${j.scriptName}`,
    "# (a copy frozen at submission). Resources are sbatch options; #SBATCH lines in it were ignored.",
    `# Granted: ${formatSlurmTime(j.resources.timeSec)}, ${j.resources.cpus} CPU(s), ${describeBytes(j.resources.memoryBytes)}, ${j.resources.gpus} GPU(s).`,
    `cd ${shellQuote(j.taskDir)} || exit 97`,
    `exec /bin/bash ${[j.scriptCopy, ...j.args].map(shellQuote).join(" ")}`,
    "",
  ].join("\n");
}

/** Quotes one word for a POSIX shell. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The `#SBATCH` directives a script contains (they are ignored; reported back to the agent). */
export function findSbatchDirectives(scriptText: string): string[] {
  return scriptText
    .split("\n")
    .filter((line) => /^#SBATCH\s/.test(line))
    .map((line) => line.trim());
}
