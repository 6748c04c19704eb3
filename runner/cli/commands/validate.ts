// `scifi validate <file|dir>... [--json]`: parse SAM files and report every problem.
// Exit 0 when all are valid, 1 when any is invalid, 2 on usage errors (no such path, nothing found).
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

export function register(program: Command): void {
  program
    .command("validate")
    .description(
      "Check SAM task files (folders are searched for task.md and *.md files with front matter); prints every problem as file:line:col",
    )
    .argument("<paths...>", "SAM files or folders")
    .option("--json", "print the parsed SAM trees (metadata, sections, checks, hashes) as JSON")
    .action(async (paths: string[], options: { json?: boolean }) => {
      const { validatePaths } = await import("../../sam/validate.ts");
      const { gateOptions } = await import("../../skills/sam-gate.ts");
      const { scifiHome } = await import("../../paths.ts");
      // The same checks every entry point's gate runs (runner/skills/sam-gate.ts).
      const outcome = validatePaths(paths, {
        ...gateOptions(scifiHome()),
        json: options.json === true,
        out: process.stdout,
        err: process.stderr,
      });
      process.exitCode = outcome === "valid" ? EXIT.ok : outcome === "invalid" ? EXIT.failed : EXIT.usage;
    });
}
