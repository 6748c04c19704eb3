// `scifi report`: build one run's page, or an index page over a runs folder (building the missing
// or outdated run pages next to each run).
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { writeFileAtomic } from "../atomic-write.ts";
import { runFiles } from "../paths.ts";
import { renderReport } from "./html.ts";
import { type IndexRow, renderIndex } from "./index-page.ts";
import { loadRun } from "./load.ts";
import { buildReportModel, type ReportModel } from "./model.ts";

/** The page's file name next to a run (`runs/<id>/report.html`). */
export const REPORT_FILE = "report.html";

export interface BuiltReport {
  file: string;
  model: ReportModel;
}

/** Builds the report of the run whose audit tape is `tapePath` and writes it to `out`. */
export function writeRunReport(tapePath: string, out: string, home?: string): BuiltReport {
  const model = buildReportModel(loadRun(tapePath, home));
  mkdirSync(dirname(out), { recursive: true });
  writeWhole(out, renderReport(model));
  return { file: out, model };
}

export interface IndexResult {
  file: string;
  rows: IndexRow[];
  built: number;
  /** Run folders that could not be reported, with why. */
  problems: { dir: string; error: string }[];
}

/** Writes `out` listing every run folder under `runsDir`; builds run pages that are missing or older than the run's files. */
export function writeIndex(runsDir: string, out: string): IndexResult {
  if (!existsSync(runsDir) || !statSync(runsDir).isDirectory())
    throw new Error(`${runsDir} is not a folder; pass the runs folder (e.g. <home>/runs)`);
  const rows: IndexRow[] = [];
  const problems: IndexResult["problems"] = [];
  let built = 0;
  for (const name of readdirSync(runsDir).sort().reverse()) {
    const dir = join(runsDir, name);
    const tape = runFiles(dir).audit;
    // An entry that vanished since the listing (another run's page being replaced) is skipped.
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory() || !existsSync(tape)) continue;
    const page = join(dir, REPORT_FILE);
    try {
      const fresh = existsSync(page) && statSync(page).mtimeMs >= newestInput(dir);
      const model = buildReportModel(loadRun(tape));
      if (!fresh) {
        writeWhole(page, renderReport(model));
        built++;
      }
      // Always a relative path (never a scheme): "./" plus the URL-encoded segments.
      rows.push(
        indexRow(model, `./${relative(dirname(out), page).split("/").map(encodeURIComponent).join("/")}`),
      );
    } catch (error) {
      problems.push({ dir, error: (error as Error).message });
    }
  }
  writeWhole(out, renderIndex(basename(runsDir), runsDir, rows, problems));
  return { file: out, rows, built, problems };
}

/**
 * Replaces `file` whole (temp file, then rename): runs ending at once (daemon workers) each rewrite
 * the index, and a reader never sees half a page.
 */
function writeWhole(file: string, text: string): void {
  writeFileAtomic(file, text, { tempFile: join(dirname(file), `.${basename(file)}.${process.pid}.tmp`) });
}

function newestInput(dir: string): number {
  const files = runFiles(dir);
  return Math.max(
    ...[files.audit, files.history, files.state, files.memory, files.spec]
      .filter((f) => existsSync(f))
      .map((f) => statSync(f).mtimeMs),
  );
}

function indexRow(model: ReportModel, href: string): IndexRow {
  const t = model.summary.totals;
  return {
    runId: model.runId,
    href,
    sam: model.sam.name,
    status: model.status,
    reason: model.reason,
    iterations: model.iterations,
    costUsd: t.costUsd,
    tokens: t.usage.input + t.usage.cacheWrite + t.usage.cacheRead + t.usage.output,
    calls: t.calls,
    wallMs: model.wallMs,
    started: model.summary.calls[0]?.time ?? "",
    chainOk: model.chain.ok,
    scripted: model.scripted,
  };
}
