// `scifi make-skill <run>...`: drafts a reusable skill from the memory and history of runs, into
// skills/drafts/ for a human to review.
import type { Command } from "commander";

interface MakeSkillFlags {
  model?: string;
  rank: string;
  force?: boolean;
}

export function register(program: Command): void {
  program
    .command("make-skill")
    .description(
      "Draft a reusable skill from the memory and history of runs (written to skills/drafts/ for review)",
    )
    .argument("<run...>", "run ids (under runs/) or run folders")
    .option("--model <spec>", "model: scripted:FILE, replay:RUN or a models config (default: models.yaml)")
    .option("--rank <n>", "model rank for the skill maker", "1")
    .option("--force", "replace an existing draft of the same name")
    .action(async (runs: string[], flags: MakeSkillFlags) => {
      const { runMakeSkill } = await import("../../helpers/make-skill/command.ts");
      process.exitCode = await runMakeSkill(runs, flags);
    });
}
