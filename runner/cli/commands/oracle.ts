// `scifi oracle <task>`: before a run, at most three high-risk ambiguous phrases in the To-do and
// Expectation, each with a clarifying question and golden/silver readings.
import type { Command } from "commander";

interface OracleFlags {
  json?: boolean;
  templated?: boolean;
  model?: string;
  rank: string;
}

export function register(program: Command): void {
  program
    .command("oracle")
    .description(
      "Find up to three high-risk ambiguous phrases in a SAM's To-do and Expectation, with two readings each",
    )
    .argument("<task>", "the SAM file")
    .option("--json", "print the report as stable JSON")
    .option("--templated", "use fixed ambiguity categories (steadier with small models)")
    .option("--model <spec>", "model: scripted:FILE, replay:RUN or a models config (default: models.yaml)")
    .option("--rank <n>", "model rank for the oracle", "1")
    .action(async (task: string, flags: OracleFlags) => {
      const { runOracleCommand } = await import("../../helpers/oracle/command.ts");
      process.exitCode = await runOracleCommand(task, flags);
    });
}
