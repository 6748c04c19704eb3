// `scifi report <run> [-o FILE] [--open]` and `scifi report --index <runs-dir> [-o FILE]`: the run
// report as one self-contained HTML page (no network requests), or an index page over many runs.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

interface ReportOptions {
  output?: string;
  open?: boolean;
  /** `true`: `--index` without a folder, the home's `runs/`. */
  index?: string | true;
}

export function register(program: Command): void {
  program
    .command("report [run]")
    .description(
      "Write a run's report as one self-contained HTML file (header, timeline, charts, memory, search). <run> is a run folder, a tape file or a run id.",
    )
    .option(
      "-o, --output <file>",
      "where to write the page (default: report.html in the run folder, index.html in the runs folder)",
    )
    .option("--open", "open the page in the default browser when written")
    .option(
      "--index [runs-dir]",
      "write an index page over every run in this folder (default: the home's runs/), building missing run pages",
    )
    .action(async (run: string | undefined, options: ReportOptions) => {
      if (options.index !== undefined) {
        if (run !== undefined) return usage("give either <run> or --index <runs-dir>, not both");
        const { homePaths, scifiHome } = await import("../../paths.ts");
        const dir = options.index === true ? homePaths(scifiHome()).runs : options.index;
        return writeIndexPage(dir, options);
      }
      if (run === undefined)
        return usage("missing <run>: pass a run folder, a tape file or a run id (or --index <runs-dir>)");
      return writeRunPage(run, options);
    });
}

async function writeRunPage(run: string, options: ReportOptions): Promise<void> {
  const { resolveTapePath } = await import("../../audit/run-path.ts");
  const { scifiHome } = await import("../../paths.ts");
  const { dirname, join, resolve } = await import("node:path");
  let tape: string;
  try {
    tape = resolveTapePath(run, scifiHome());
  } catch (error) {
    return usage((error as Error).message);
  }
  const { REPORT_FILE, writeRunReport } = await import("../../report/report.ts");
  const out = resolve(options.output ?? join(dirname(tape), REPORT_FILE));
  const { model } = writeRunReport(tape, out);
  if (!model.chain.ok) {
    // Same warning as `scifi audit show`: the page is written, and says so at the top.
    process.stderr.write(`scifi report: WARNING ${tape}:${model.chain.line}: ${model.chain.reason}\n`);
  }
  process.stdout.write(`${out}\n`);
  if (options.open) await openInBrowser(out);
  process.exitCode = EXIT.ok;
}

async function writeIndexPage(runsDir: string, options: ReportOptions): Promise<void> {
  const { join, resolve } = await import("node:path");
  const { writeIndex } = await import("../../report/report.ts");
  const out = resolve(options.output ?? join(runsDir, "index.html"));
  let result: ReturnType<typeof writeIndex>;
  try {
    result = writeIndex(resolve(runsDir), out);
  } catch (error) {
    return usage((error as Error).message);
  }
  for (const p of result.problems) process.stderr.write(`scifi report: skipped ${p.dir}: ${p.error}\n`);
  const helpers = result.rows.filter((r) => r.status === "helper").length;
  process.stdout.write(
    `${out} (${result.rows.length - helpers} runs${helpers ? `, ${helpers} helper calls listed apart` : ""}, ${result.built} run pages built)\n`,
  );
  if (options.open) await openInBrowser(out);
  process.exitCode = result.problems.length > 0 ? EXIT.failed : EXIT.ok;
}

function usage(message: string): void {
  process.stderr.write(`scifi report: ${message}\n`);
  process.exitCode = EXIT.usage;
}

/** Opens the file with the desktop's handler; a headless machine gets the path to copy instead. */
async function openInBrowser(file: string): Promise<void> {
  const { spawn } = await import("node:child_process");
  const opener =
    process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  await new Promise<void>((resolve) => {
    const child = spawn(opener, [file], { detached: true, stdio: "ignore" });
    child.on("error", () => {
      process.stderr.write(`scifi report: could not start '${opener}'; open ${file} in a browser yourself\n`);
      resolve();
    });
    child.on("spawn", () => {
      child.unref();
      resolve();
    });
  });
}
