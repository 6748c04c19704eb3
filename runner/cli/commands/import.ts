// `scifi import harbor <task folder> [-o OUT]`: a Harbor / Terminal-Bench task as a SAM folder, its
// tests as hidden checks; prints (and writes to OUT/harbor-import.md) what was and was not mapped.
// Exit 0 when imported, 2 when the task folder is malformed (the error names the file and key).
import { basename, resolve } from "node:path";
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

interface ImportFlags {
  out?: string;
  outputs?: string;
  passThreshold?: string;
  json?: boolean;
}

export function register(program: Command): void {
  const command = program
    .command("import")
    .description("Turn tasks of other formats into SAM folders (`scifi import harbor <task folder>`)");
  command
    .command("harbor")
    .description(
      "Import a Harbor / Terminal-Bench task (task.toml, instruction.md, environment/, tests/test.sh): the instruction as To-do, tests/ as hidden checks judged by their reward, limits mapped; lists what could not be mapped",
    )
    .argument("<task>", "the Harbor task folder")
    .option("-o, --out <dir>", "SAM folder to write (must not exist or be empty; default ./<task>-sam)")
    .option(
      "--outputs <files>",
      "more of the agent's files the tests read, comma-separated, relative to Harbor's /app",
    )
    .option("--pass-threshold <n>", "reward each metric must reach to pass (default 1)")
    .option("--json", "print the result as JSON")
    .action(async (task: string, flags: ImportFlags) => {
      const threshold = flags.passThreshold === undefined ? undefined : Number(flags.passThreshold);
      if (threshold !== undefined && !Number.isFinite(threshold)) {
        process.stderr.write(
          `scifi import harbor: --pass-threshold must be a number, got ${flags.passThreshold}\n`,
        );
        process.exitCode = EXIT.usage;
        return;
      }
      const { importHarbor, HarborImportError } = await import("../../import/harbor.ts");
      const { scifiHome } = await import("../../paths.ts");
      const out = resolve(flags.out ?? `${basename(resolve(task))}-sam`);
      try {
        const result = importHarbor(task, out, {
          home: scifiHome(),
          ...(flags.outputs
            ? {
                outputs: flags.outputs
                  .split(",")
                  .map((s) => s.trim())
                  .filter(Boolean),
              }
            : {}),
          ...(threshold !== undefined ? { passThreshold: threshold } : {}),
        });
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
          return;
        }
        const list = (items: string[]) =>
          items.length ? items.map((i) => `  - ${i}`).join("\n") : "  (nothing)";
        process.stdout.write(
          `${result.sam}\nmapped:\n${list(result.mapped)}\nnot mapped:\n${list(result.unmapped)}\nnotes written to ${out}/harbor-import.md; check the SAM with: scifi validate ${out}\n`,
        );
      } catch (error) {
        if (!(error instanceof HarborImportError)) throw error;
        process.stderr.write(`scifi import harbor: ${error.message}\n`);
        process.exitCode = EXIT.usage;
      }
    });
}
