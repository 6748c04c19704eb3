// `scifi ask "<question>"`: answers questions about using scifi from its own documents and --help,
// citing them; commands the answer invents are flagged by a deterministic guard.
import type { Command } from "commander";

interface AskFlags {
  model?: string;
  rank: string;
}

export function register(program: Command): void {
  program
    .command("ask")
    .description(
      "Answer a question about using scifi from the README, the SAM reference, the skills and --help",
    )
    .argument("<question>", "the question, in plain language")
    .option("--model <spec>", "model: scripted:FILE, replay:RUN or a models config (default: models.yaml)")
    .option("--rank <n>", "model rank for the answer", "1")
    .action(async (question: string, flags: AskFlags) => {
      const { runAsk } = await import("../../helpers/ask/command.ts");
      process.exitCode = await runAsk(question, flags);
    });
}
