// `scifi make-task "<request>"`: drafts a SAM with the task maker, validates and repairs it, and
// writes it for the user to review. Nothing is run; grants the request did not name are withheld.
import type { Command } from "commander";

interface MakeTaskFlags {
  output?: string;
  model?: string;
  rank: string;
  force?: boolean;
}

export function register(program: Command): void {
  program
    .command("make-task")
    .description(
      "Draft a SAM task from a plain-language request (validated, never run; grants only what you name)",
    )
    .argument("<request>", "what the task should do, in plain language")
    .option("-o, --output <file>", "where to write the SAM (default: tasks/<name>.md in the scifi home)")
    .option("--model <spec>", "model: scripted:FILE, replay:RUN or a models config (default: models.yaml)")
    .option("--rank <n>", "model rank for the task maker", "1")
    .option("--force", "replace the output file if it exists")
    .action(async (request: string, flags: MakeTaskFlags) => {
      const { runMakeTask } = await import("../../helpers/make-task/command.ts");
      process.exitCode = await runMakeTask(request, flags);
    });
}
