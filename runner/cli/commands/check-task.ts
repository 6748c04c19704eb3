// `scifi check-task <task> [--solution DIR] [--backend docker|apptainer] [--json] [--refresh]`:
// audits a task's checks without any model (docs/check-task.md). Exit 0: sound; 1: a finding
// (each named: which audit, which check, what happened) or an audit that could not run; 2: bad input.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { visible, visibleJson } from "../../terminal-text.ts";

interface Flags {
  solution?: string;
  backend?: string;
  json?: boolean;
  refresh?: boolean;
}

export function register(program: Command): void {
  program
    .command("check-task")
    .description(
      "Audit a task's checks without a model: they must fail on the untouched folder and for built-in lazy agents (scripted), and pass with --solution",
    )
    .argument("<task>", "a task folder (its task.md) or a SAM file in one (a variant's task.nl.md)")
    .option(
      "--solution <dir>",
      "files laid over a copy of the task folder (a solve.sh at its top is run); the checks must pass",
    )
    .option("--backend <name>", "sandbox backend: docker or apptainer (default docker)")
    .option("--json", "print the audit report as JSON")
    .option("--refresh", "audit again even when a cached result for this content exists")
    .action(async (task: string, flags: Flags) => {
      process.exitCode = await checkTaskCommand(task, flags);
    });
}

async function checkTaskCommand(task: string, flags: Flags): Promise<number> {
  const { existsSync, statSync } = await import("node:fs");
  const { basename, dirname, resolve } = await import("node:path");
  const { scifiHome } = await import("../../paths.ts");
  const { AuditInputError, auditTask } = await import("../../check-task/audit.ts");
  const { auditText } = await import("../../check-task/text.ts");
  if (flags.backend !== undefined && flags.backend !== "docker" && flags.backend !== "apptainer") {
    process.stderr.write(
      `scifi check-task: --backend '${visible(flags.backend)}' is not a backend: give docker or apptainer\n`,
    );
    return EXIT.usage;
  }
  const path = resolve(task);
  const isFile = existsSync(path) && statSync(path).isFile();
  try {
    const report = await auditTask(isFile ? dirname(path) : path, {
      home: scifiHome(),
      ...(isFile ? { sam: basename(path) } : {}),
      ...(flags.solution ? { solution: flags.solution } : {}),
      ...(flags.backend ? { backend: flags.backend } : {}),
      ...(flags.refresh ? { refresh: true } : {}),
      onAudit: (name) => {
        if (!flags.json) process.stderr.write(`check-task: ${name}...\n`);
      },
    });
    process.stdout.write(flags.json ? `${visibleJson(report, 2)}\n` : auditText(report));
    return report.sound ? EXIT.ok : EXIT.failed;
  } catch (error) {
    if (error instanceof AuditInputError) {
      process.stderr.write(`scifi check-task: ${visible(error.message)}\n`);
      if (error.diagnostics) process.stderr.write(`${visible(error.diagnostics)}\n`);
      return EXIT.usage;
    }
    throw error;
  }
}
