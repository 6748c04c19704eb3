// What a run leaves for people besides its records: the task folder's change snapshots (start, after
// each work pass, end, with the first page of each PDF) and, at its end, the report page and the
// runs index.
import { existsSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import type { RunDeps, RunResult } from "./deps.ts";
import { RUN_ERROR_FILE, recordRunError } from "./errors.ts";
import type { RunStatus } from "./status.ts";

/**
 * The run's change snapshots (runner/report/changes.ts) and its report. The start snapshot is taken
 * before the loop (a resumed run keeps the one its start took); one after each work pass, as the
 * checks begin (the work sandbox is gone then); one at the end, with small images. Then the report
 * page and the runs index are written. Nothing here fails the run: a snapshot that cannot be taken is
 * partial, a report that cannot be written is reported through onReport.
 */
/** What the end of a run needs of the caller's options: the home, the backend, where to say it. */
export interface ReportOptions {
  home: string;
  backend?: string;
  sandboxBackend?: RunDeps["backend"];
  onReport?: (report: { file?: string; index?: string; error?: string }) => void;
}

export async function changesTracker(taskDir: string, resumedDir: string | undefined) {
  const changes = await import("../../report/changes.ts");
  let runDir = resumedDir;
  const start =
    taskDir && !(resumedDir && existsSync(join(changes.changesDir(resumedDir), "start.json")))
      ? await changes.snapshotTaskFolder(taskDir, "start")
      : undefined;
  const pending: Promise<void>[] = [];
  let lastCheck = -1;
  const created = (dir: string): void => {
    runDir = dir;
    if (start) changes.writeSnapshot(dir, start, "start");
  };
  if (resumedDir) created(resumedDir);
  return {
    created,
    onStatus:
      (inner: ((status: RunStatus) => void) | undefined) =>
      (status: RunStatus): void => {
        if (status.phase === "checks" && status.iteration !== lastCheck && taskDir && runDir) {
          lastCheck = status.iteration;
          const dir = runDir;
          pending.push(
            changes
              .snapshotTaskFolder(taskDir, `after the work of iteration ${status.iteration}`, {
                ...(start ? { since: start } : {}),
              })
              .then((snap) => changes.writeSnapshot(dir, snap, `iteration-${status.iteration}`))
              .catch(() => undefined),
          );
        }
        inner?.(status);
      },
    around: async (options: ReportOptions, run: () => Promise<RunResult>): Promise<RunResult> => {
      try {
        const result = await run();
        // A resumed run that got to an end no longer stopped on the error recorded before.
        if (runDir) rmSync(join(runDir, RUN_ERROR_FILE), { force: true });
        return result;
      } catch (error) {
        if (runDir) recordRunError(runDir, error);
        throw error;
      } finally {
        await Promise.all(pending);
        if (runDir) {
          if (taskDir) {
            // With the first page of each PDF the run made, rendered in a sandbox (pdf-pages.ts).
            const { endSnapshotWithPdfPages } = await import("../../report/pdf-pages.ts");
            const end = await endSnapshotWithPdfPages(
              taskDir,
              runDir,
              options.sandboxBackend ?? options.backend,
            );
            try {
              changes.writeSnapshot(runDir, end, "end");
            } catch {
              // The report says the end snapshot is missing.
            }
          }
          options.onReport?.(await writeReports(options.home, runDir));
        }
      }
    },
  };
}

/** Runs folders with more entries get no index rebuilt at each run's end. */
const MAX_INDEX_RUNS_AT_END = 300;

/** The run's report page and the runs index, rebuilt at a run's end. */
async function writeReports(
  home: string,
  runDir: string,
): Promise<{ file?: string; index?: string; error?: string }> {
  try {
    const { REPORT_FILE, writeIndex, writeRunReport } = await import("../../report/report.ts");
    const { runFiles } = await import("../../paths.ts");
    const file = join(runDir, REPORT_FILE);
    writeRunReport(runFiles(runDir).audit, file, home);
    const runs = dirname(runDir);
    // The index reads every run's tape: past a few hundred runs that is for `scifi report --index`,
    // not for the end of each run.
    if (readdirSync(runs).length > MAX_INDEX_RUNS_AT_END) return { file };
    try {
      const index = writeIndex(runs, join(runs, "index.html")).file;
      return { file, index };
    } catch {
      return { file };
    }
  } catch (error) {
    return { error: `the report could not be written: ${(error as Error).message}` };
  }
}
