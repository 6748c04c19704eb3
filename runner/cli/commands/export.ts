// `scifi export <runs or eval id>... --format atif|sft|preference|otlp [-o PATH]`: verified tapes
// as trajectories, fine-tuning rows, preference pairs or OpenTelemetry traces (docs/export.md).
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { visibleJson } from "../../terminal-text.ts";

interface ExportCliOptions {
  format: string;
  output?: string;
  endpoint?: string;
  verdict?: string[];
  model?: string;
  role?: string[];
  task?: string[];
  since?: string;
  until?: string;
  eval?: string;
  key?: string;
  content?: boolean;
  per?: string;
  skipRefused?: boolean;
  allowUnfinished?: boolean;
  json?: boolean;
}

const list = (value: string, previous: string[] = []) => [
  ...previous,
  ...value.split(",").filter((v) => v !== ""),
];

export function register(program: Command): void {
  program
    .command("export <inputs...>")
    .description(
      "Export verified runs: ATIF trajectories, SFT rows, preference pairs (from an eval) or OTLP traces. <inputs> are run ids or folders and eval ids or folders; every tape is verified first and a run that does not verify is refused",
    )
    .requiredOption("--format <format>", "atif | sft | preference | otlp")
    .option("-o, --output <path>", "write here (default: standard output)")
    .option(
      "--endpoint <url>",
      "otlp: POST to this OTLP/HTTP traces endpoint (e.g. http://localhost:4318/v1/traces)",
    )
    .option(
      "--verdict <list>",
      "only runs that ended so: passed, failed, blocked, unfinished (sft default: passed)",
      list,
    )
    .option("--model <text>", "only runs whose model spec contains this")
    .option("--role <list>", "only these agents' calls: prescan, work, review, final_review", list)
    .option("--task <list>", "only these tasks (the SAM's name)", list)
    .option("--since <date>", "only runs started at or after this date (YYYY-MM-DD or ISO time)")
    .option("--until <date>", "only runs started before this date")
    .option("--eval <id>", "only runs of this eval's trials")
    .option(
      "--key <file>",
      "the site's audit key: MACs are verified (default: SCIFI_AUDIT_KEY_FILE or SCIFI_AUDIT_KEY)",
    )
    .option(
      "--content",
      "otlp: message content (prompts, answers, tool arguments and results) as span attributes",
    )
    .option("--per <unit>", "sft: a row per conversation (default) or per call", "conversation")
    .option(
      "--skip-refused",
      "export the runs that verify and name the refused ones (default: refuse the whole export)",
    )
    .option(
      "--allow-unfinished",
      "export runs whose tape has no run_end record (unfinished runs, tapes older than that record)",
    )
    .option("--json", "print the summary as JSON on standard error")
    .action(async (inputs: string[], options: ExportCliOptions) => {
      const { FORMATS, ExportFailed, runExport } = await import("../../export/export.ts");
      const { auditKeyFromEnv, readAuditKeyFile } = await import("../../audit/key.ts");
      const { scifiHome } = await import("../../paths.ts");
      const format = options.format as (typeof FORMATS)[number];
      if (!FORMATS.includes(format))
        return usage(`unknown format '${options.format}'; valid formats: ${FORMATS.join(", ")}`);
      if (options.per !== "conversation" && options.per !== "call")
        return usage(`--per is conversation or call, not '${options.per}'`);
      if (options.endpoint && format !== "otlp") return usage("--endpoint is for --format otlp");
      if (options.endpoint && options.output) return usage("give either --endpoint or -o, not both");
      let key: Buffer | undefined;
      try {
        key = options.key ? readAuditKeyFile(options.key) : auditKeyFromEnv();
      } catch (error) {
        return usage((error as Error).message);
      }
      try {
        const summary = await runExport({
          inputs,
          format,
          home: scifiHome(),
          ...(options.output ? { out: options.output } : {}),
          ...(options.endpoint ? { endpoint: options.endpoint } : {}),
          ...(key ? { key } : {}),
          content: options.content === true,
          per: options.per,
          skipRefused: options.skipRefused === true,
          allowUnfinished: options.allowUnfinished === true,
          filters: {
            ...(options.verdict ? { verdict: options.verdict } : {}),
            ...(options.model ? { model: options.model } : {}),
            ...(options.role ? { role: options.role } : {}),
            ...(options.task ? { task: options.task } : {}),
            ...(options.since ? { since: options.since } : {}),
            ...(options.until ? { until: options.until } : {}),
            ...(options.eval ? { evalId: options.eval } : {}),
          },
          write: (bytes) => process.stdout.write(bytes),
        });
        for (const r of summary.refused)
          process.stderr.write(`scifi export: REFUSED ${r.runId}: ${r.reason}\n`);
        process.stderr.write(
          options.json
            ? `${visibleJson(summary)}\n`
            : `scifi export: ${summary.exported.length} run(s), ${summary.items} ${unit(format)} (${format})${summary.out ? ` -> ${summary.out}` : options.endpoint ? ` -> ${options.endpoint}` : ""}${summary.redactions > 0 ? `; ${summary.redactions} secret(s) redacted` : ""}\n`,
        );
        process.exitCode = summary.refused.length > 0 ? EXIT.failed : EXIT.ok;
      } catch (error) {
        if (error instanceof ExportFailed) {
          process.stderr.write(`scifi export: ${error.message}\n`);
          if (options.json) process.stderr.write(`${visibleJson(error.summary)}\n`);
          process.exitCode = EXIT.failed;
          return;
        }
        const name = (error as Error).name;
        if (name === "ExportInputError" || name === "ExportRefused") return usage((error as Error).message);
        throw error;
      }
    });
}

function unit(format: string): string {
  return { atif: "trajectories", sft: "rows", preference: "pairs", otlp: "spans" }[format] ?? "items";
}

function usage(message: string): void {
  process.stderr.write(`scifi export: ${message}\n`);
  process.exitCode = EXIT.usage;
}
