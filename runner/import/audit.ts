// The seam between `scifi import harbor` and `scifi check-task` (issue 40, items 1 and 7): an
// imported task is audited with its reference solution before anyone counts it. The import calls
// auditImport once the SAM folder is in place; `--no-audit` skips it, and says so.
//
// The audit itself (scifi check-task) sits above the import in the layers: the CLI hands it in as
// `auditor`. Without one the audit is reported as not run, never as passed.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { HarborImport } from "./harbor.ts";

export interface ImportAudit {
  /** Whether check-task ran. */
  ran: boolean;
  /** When it ran: whether the checks are sound (fail untouched and for lazy agents, pass with the solution). */
  sound?: boolean;
  /** Each finding: which audit, which check, what happened. */
  findings: string[];
  /** One line for the terminal and harbor-import.md. */
  note: string;
  /** The audit was asked for and could not run (no engine, say): the import is not a plain success. */
  failed?: boolean;
}

/** What the CLI hands in: check-task run on the imported folder with a solution folder (solve.sh). */
export type ImportAuditor = (
  taskDir: string,
  solutionDir: string | undefined,
) => Promise<{ sound: boolean; findings: string[]; cached: boolean }>;

export async function auditImport(
  imported: HarborImport,
  options: { skip: boolean; auditor?: ImportAuditor },
): Promise<ImportAudit> {
  if (options.skip) return { ran: false, findings: [], note: "skipped (--no-audit)" };
  const solution = imported.solution
    ? ` --solution ${imported.solution.dir} (script ${imported.solution.script})`
    : " (the task has no reference solution)";
  if (imported.unpassable.length > 0)
    return {
      ran: false,
      findings: [],
      note: "not run: the task is marked unpassable here (its tests fetch software no mapping covers)",
    };
  if (!options.auditor)
    return {
      ran: false,
      findings: [],
      note: `not run; audit by hand with scifi check-task ${imported.outDir}${solution}`,
    };
  const dir = imported.solution ? solutionFolder(imported.solution) : undefined;
  try {
    let r: Awaited<ReturnType<ImportAuditor>>;
    try {
      r = await options.auditor(imported.outDir, dir);
    } catch (error) {
      return {
        ran: false,
        failed: true,
        findings: [],
        note: `could not run: ${(error as Error).message}; the task is imported, audit it with scifi check-task ${imported.outDir}${solution} (or import with --no-audit)`,
      };
    }
    const how = imported.solution ? "with its reference solution" : "without a reference solution";
    return {
      ran: true,
      sound: r.sound,
      findings: r.findings,
      note: `${r.sound ? "sound" : "NOT sound"} (scifi check-task ${how}${r.cached ? ", cached" : ""})`,
    };
  } finally {
    if (dir && dir !== imported.solution?.dir) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The solution as check-task takes it: a folder laid over the task whose `solve.sh` runs in it.
 * Harbor's `solution/` is that already; Terminal-Bench's `solution.sh` (in the task folder, beside
 * its tests) is copied alone into a temporary folder as `solve.sh`.
 */
function solutionFolder(solution: { dir: string; script: string }): string {
  if (solution.script === "solve.sh") return solution.dir;
  const dir = mkdtempSync(join(tmpdir(), "scifi-import-solution-"));
  copyFileSync(join(solution.dir, solution.script), join(dir, "solve.sh"));
  return dir;
}
