// The seam between `scifi import harbor` and `scifi check-task` (issue 40, items 1 and 7): an
// imported task is audited with its reference solution before anyone counts it. The import calls
// auditImport once the SAM folder is in place; `--no-audit` skips it, and says so.
//
// SEAM(check-task): check-task's auditTask is built in runner/check-task/ on another branch. Wire
// it in `auditImport` below: run it on `imported.outDir` with the solution (`imported.solution`:
// Harbor's solution/ with solve.sh, or a Terminal-Bench task folder with solution.sh; the script
// runs in the working folder, Harbor's /app, which is the SAM's task folder) and map its result
// onto ImportAudit. Until then the audit is reported as not run, never as passed.
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
}

export async function auditImport(imported: HarborImport, options: { skip: boolean }): Promise<ImportAudit> {
  if (options.skip) return { ran: false, findings: [], note: "skipped (--no-audit)" };
  const solution = imported.solution
    ? ` --solution ${imported.solution.dir} (script ${imported.solution.script})`
    : " (the task has no reference solution)";
  return {
    ran: false,
    findings: [],
    note: `not run: scifi check-task is not part of this build yet; audit by hand with scifi check-task ${imported.outDir}${solution}`,
  };
}
