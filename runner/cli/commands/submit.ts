// `scifi submit <task>`: run a task as a SLURM job on a compute node (`scifi run` there, in a
// Docker or Apptainer sandbox). Prints the job id; --dry-run prints the batch script instead.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { visibleJson } from "../../terminal-text.ts";

interface SubmitFlags {
  partition?: string;
  time?: string;
  gres?: string;
  mem?: string;
  cpusPerTask?: string;
  account?: string;
  backend: string;
  model?: string;
  dryRun?: boolean;
  json?: boolean;
}

const BACKENDS = ["auto", "docker", "apptainer"] as const;

export function register(program: Command): void {
  program
    .command("submit")
    .description(
      "Run a task as a SLURM job: writes a batch script that runs `scifi run` on the compute node, submits it with sbatch and prints the job id. The SAM's walltime, gpu, cpus and memory win over the flags; the site policy caps both",
    )
    .argument("<task>", "SAM file, or a task folder holding task.md")
    .option("--partition <name>", "partition (default: the site policy's, else the cluster's default)")
    .option("--time <limit>", "time limit when the SAM sets no walltime (minutes, H:MM:SS, D-HH:MM:SS)")
    .option("--gres <spec>", "generic resources when the SAM asks for no GPU (e.g. gpu:a100:1)")
    .option("--mem <size>", "memory when the SAM sets none (e.g. 8G)")
    .option("--cpus-per-task <n>", "CPUs when the SAM sets none")
    .option("--account <name>", "account to charge")
    .option(
      "--backend <name>",
      `sandbox on the node: ${BACKENDS.join(" | ")} (auto: docker where the node has an engine)`,
      "auto",
    )
    .option("--model <spec>", "model for `scifi run` on the node (scripted:FILE, a models config file)")
    .option("--dry-run", "print the batch script and options; write and submit nothing")
    .option("--json", "print the result as JSON")
    .action(async (task: string, flags: SubmitFlags) => {
      const usage = checkFlags(flags);
      if (usage) {
        process.stderr.write(`scifi submit: ${usage}\n`);
        process.exitCode = EXIT.usage;
        return;
      }
      const { submitTask } = await import("../../jobs/submit.ts");
      const { exitCodeOf, InvalidInput } = await import("../../run/session/errors.ts");
      const { loadSam } = await import("../../run/setup.ts");
      const { formatDiagnostic } = await import("../../sam/diagnostics.ts");
      const { scifiHome } = await import("../../paths.ts");
      try {
        const result = await submitTask({
          home: scifiHome(),
          sam: await loadSam(task, scifiHome()),
          flags: {
            partition: flags.partition,
            time: flags.time,
            gres: flags.gres,
            mem: flags.mem,
            cpusPerTask: flags.cpusPerTask === undefined ? undefined : Number(flags.cpusPerTask),
            account: flags.account,
          },
          backend: flags.backend as (typeof BACKENDS)[number],
          dryRun: flags.dryRun === true,
          model: flags.model,
        });
        if (flags.json) {
          process.stdout.write(`${visibleJson(result, 2)}\n`);
        } else if (flags.dryRun) {
          for (const note of result.notes) process.stderr.write(`note: ${note}\n`);
          process.stdout.write(result.script);
        } else {
          for (const note of result.notes) process.stderr.write(`note: ${note}\n`);
          process.stdout.write(`submitted job ${result.jobId} (${result.sbatchArgs.join(" ")})\n`);
          process.stdout.write(`record: ${result.submitDir}/submit.json\n`);
        }
        process.exitCode = EXIT.ok;
      } catch (error) {
        const message =
          error instanceof InvalidInput && error.samFile
            ? `${error.samFile} is not a valid SAM:\n${error.diagnostics.map(formatDiagnostic).join("\n")}`
            : error instanceof Error
              ? error.message
              : String(error);
        process.stderr.write(`scifi submit: ${message}\n`);
        process.exitCode = exitCodeOf(error);
      }
    });
}

function checkFlags(flags: SubmitFlags): string | undefined {
  if (!(BACKENDS as readonly string[]).includes(flags.backend)) {
    return `--backend '${flags.backend}' is not one of: ${BACKENDS.join(", ")}`;
  }
  if (flags.cpusPerTask !== undefined && !/^[1-9]\d*$/.test(flags.cpusPerTask)) {
    return `--cpus-per-task '${flags.cpusPerTask}' must be a whole number >= 1`;
  }
  return undefined;
}
