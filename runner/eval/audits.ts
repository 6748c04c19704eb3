// The audit of each task's checks before an eval's trials (runner/check-task, docs/eval.md "Flags"):
// one per task, on its first possible variant (the possible variants judge alike: suite.ts),
// with the task's solution when `<task folder>.solution/` exists; cached by content under the home,
// so a second eval of the same tasks adds a read per task. The report is kept in the eval's folder
// (`audits/<task>.json`): the summary is computed from it.
import { existsSync, mkdirSync, statSync } from "node:fs";
import { basename, dirname } from "node:path";
import { writeJsonAtomic } from "../atomic-write.ts";
import { auditFile, readAudit } from "./flags.ts";
import type { EvalPlan } from "./plan.ts";

export async function auditTasks(o: {
  home: string;
  evalDir: string;
  plan: EvalPlan;
  log: (line: string) => void;
}): Promise<void> {
  const { auditTask } = await import("../check-task/audit.ts");
  // A SLURM eval's backend is chosen per node; the audit runs here, on this machine's Docker.
  const backend = o.plan.backend === "auto" ? "docker" : o.plan.backend;
  for (const task of o.plan.tasks) {
    const kept = readAudit(o.evalDir, task.name);
    if (kept && !kept.audits.some((a) => a.status === "error")) continue;
    // The first possible variant: an impossible one (suite.ts) is meant to be failed.
    const variant = task.variants.find((v) => !v.impossible);
    if (!variant) continue;
    const file = auditFile(o.evalDir, task.name);
    const t0 = performance.now();
    // A task's solution lies beside its folder (`<task folder>.solution/`), where no agent sees it.
    const solution = `${task.dir}.solution`;
    try {
      const report = await auditTask(task.dir, {
        home: o.home,
        sam: basename(variant.file),
        backend,
        ...(existsSync(solution) && statSync(solution).isDirectory() ? { solution } : {}),
      });
      mkdirSync(dirname(file), { recursive: true });
      writeJsonAtomic(file, report, { mode: 0o644 });
      const took = `${((performance.now() - t0) / 1000).toFixed(1)} s${report.cached ? ", cached" : ""}`;
      o.log(
        report.sound
          ? `audit ${task.name}: sound (${took})`
          : `audit ${task.name}: ${report.findings.length} finding(s) (${took}): ${report.findings.map((f) => f.text).join("; ")}`,
      );
    } catch (error) {
      o.log(`audit ${task.name}: could not run: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
