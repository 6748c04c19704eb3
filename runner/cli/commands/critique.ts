// `scifi critique <run>`: the tracer and the critique on a finished run's final task folder (docs/critique.md).
import type { Command } from "commander";

interface CritiqueFlags {
  model?: string;
  backend?: string;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command("critique")
    .description(
      "Trace what a finished run's code computes and critique it against its SAM (citations checked)",
    )
    .argument("<run>", "the run id (under <home>/runs)")
    .option("--model <spec>", "model: scripted:FILE, replay:RUN or a models config (default: the run's)")
    .option("--backend <name>", "sandbox backend for the tracer (default: the run's)")
    .option("--json", "print the critique record as JSON")
    .action(async (run: string, flags: CritiqueFlags) => {
      const { runCritiqueCommand } = await import("../../helpers/critique/command.ts");
      process.exitCode = await runCritiqueCommand(run, flags);
    });
}
