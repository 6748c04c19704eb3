// `scifi import harbor <task folder> [-o OUT]`: a Harbor / Terminal-Bench task as a SAM folder, its
// tests as hidden checks; prints (and writes to OUT/harbor-import.md) what was and was not mapped.
// Exit 0 when imported, 1 when its tests cannot pass here (each line named; --allow-unpassable
// imports it anyway, marked), 2 when the task folder is malformed (the error names the file and key).
import { appendFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { visibleJson } from "../../terminal-text.ts";

interface ImportFlags {
  out?: string;
  outputs?: string;
  passThreshold?: string;
  json?: boolean;
  image?: string;
  allowUnpassable?: boolean;
  audit: boolean;
}

export function register(program: Command): void {
  const command = program
    .command("import")
    .description("Turn tasks of other formats into SAM folders (`scifi import harbor <task folder>`)");
  command
    .command("harbor")
    .description(
      "Import a Harbor task (task.toml, instruction.md, environment/, tests/test.sh) or a Terminal-Bench one (task.yaml, run-tests.sh, tests/): the instruction as To-do, tests/ as hidden checks judged by their reward, limits mapped, the tests' installs mapped to the image's tools or refused; lists what could not be mapped",
    )
    .argument("<task>", "the Harbor (task.toml) or Terminal-Bench (task.yaml) task folder")
    .option("-o, --out <dir>", "SAM folder to write (must not exist or be empty; default ./<task>-sam)")
    .option(
      "--outputs <files>",
      "more of the agent's files the tests read, comma-separated, relative to Harbor's /app",
    )
    .option("--pass-threshold <n>", "reward each metric must reach to pass (default 1)")
    .option(
      "--image <name>",
      "image the checks run in (written as image:); the tests' installs are mapped to what it holds (default: the site's image)",
    )
    .option(
      "--allow-unpassable",
      "import a task whose tests fetch software no mapping covers; recorded as unpassable: in the SAM",
    )
    .option("--no-audit", "do not audit the imported task's checks with its solution (scifi check-task)")
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
      const { importHarbor, HarborImportError, UnpassableImport } = await import("../../import/harbor.ts");
      const { auditImport } = await import("../../import/audit.ts");
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
          ...(flags.image ? { image: flags.image } : {}),
          ...(flags.allowUnpassable ? { allowUnpassable: true } : {}),
        });
        const { auditTask } = await import("../../check-task/audit.ts");
        const audit = await auditImport(result, {
          skip: !flags.audit,
          auditor: async (taskDir, solution) => {
            if (!flags.json)
              process.stderr.write(`auditing the imported checks (scifi check-task ${taskDir})...\n`);
            const report = await auditTask(taskDir, { home: scifiHome(), ...(solution ? { solution } : {}) });
            return {
              sound: report.sound,
              findings: report.findings.map((f) => f.text),
              cached: report.cached === true,
            };
          },
        });
        appendFileSync(
          join(out, "harbor-import.md"),
          `\n## Audit of the checks (scifi check-task)\n- ${audit.note}\n${audit.findings.map((f) => `- ${f}`).join("\n")}`,
        );
        // Checks the audit found unsound are never a plain success. (An unpassable task imported with
        // --allow-unpassable exits 0: asked for, and marked in the SAM and on the terminal.)
        if (audit.sound === false || audit.failed) process.exitCode = EXIT.failed;
        if (flags.json) {
          process.stdout.write(`${visibleJson({ ...result, audit }, 2)}\n`);
          return;
        }
        const list = (items: string[]) =>
          items.length ? items.map((i) => `  - ${i}`).join("\n") : "  (nothing)";
        const unpassable = result.unpassable.length
          ? `UNPASSABLE here (imported with --allow-unpassable, marked unpassable: in the SAM):\n${list(result.unpassable)}\n`
          : "";
        process.stdout.write(
          `${result.sam}\n${unpassable}mapped:\n${list(result.mapped)}\nnot mapped:\n${list(result.unmapped)}\naudit: ${audit.note}\n${audit.findings.length ? `${list(audit.findings)}\n` : ""}notes written to ${out}/harbor-import.md; check the SAM with: scifi validate ${out}\n`,
        );
      } catch (error) {
        if (!(error instanceof HarborImportError)) throw error;
        process.stderr.write(`scifi import harbor: ${error.message}\n`);
        process.exitCode = error instanceof UnpassableImport ? EXIT.failed : EXIT.usage;
      }
    });
}
