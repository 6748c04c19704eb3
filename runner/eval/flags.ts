// What cannot discriminate (docs/eval.md, "Flags"): before its trials each task's checks are
// audited (runner/check-task, cached by content), and the summary marks the tasks a lazy agent
// passes, the tasks the solution fails, the tasks no trial passed and the tasks every trial
// passed; pass rates per model are given again over the tasks without a flag. The audits of an
// eval live in its folder (`audits/<task>.json`), so a summary is computed from the eval's files alone.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { AuditReport } from "../check-task/audit.ts";
import { visible } from "../terminal-text.ts";
import type { EvalPlan } from "./plan.ts";
import { passStats } from "./sample-stats.ts";
import type { EvalFlags, EvalSummary, FlagKind, PassStats, TaskFlags } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";

/** Why a task is flagged, in the order they are listed. */
export const FLAG_WORDS = {
  lazy_passes: "a lazy agent passes its checks",
  solution_fails: "its solution fails its checks",
  audit_error: "its audit could not run",
  no_trial_passed: "no trial passed",
  every_trial_passed: "every trial passed",
} as const satisfies Record<FlagKind, string>;
/** Where an eval keeps a task's audit. */
export function auditFile(evalDir: string, task: string): string {
  return join(evalDir, "audits", `${task}.json`);
}

export function readAudit(evalDir: string, task: string): AuditReport | undefined {
  const file = auditFile(evalDir, task);
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as AuditReport;
  } catch {
    return undefined;
  }
}

/** The summary with its flags (`flags`): computed from the plan, the results and the eval's audits. */
export function withFlags(
  evalDir: string,
  plan: EvalPlan,
  summary: EvalSummary,
  results: readonly TrialResult[],
): EvalSummary & { flags: EvalFlags } {
  const audited = plan.audit !== false;
  const planned = new Set(plan.trials.map((t) => t.trialId));
  const judged = results.filter((r) => planned.has(r.trialId) && r.status !== "error");
  const tasks = plan.tasks.map((t): TaskFlags => {
    const report = audited ? readAudit(evalDir, t.name) : undefined;
    const own = judged.filter((r) => r.task === t.name);
    const lazyPasses = (report?.findings ?? []).filter((f) => f.audit !== "solution").map((f) => f.audit);
    const solutionFails = (report?.findings ?? []).some((f) => f.audit === "solution");
    const auditError = report?.audits.some((a) => a.status === "error") ?? false;
    const noTrialPassed = own.length > 0 && own.every((r) => r.status !== "pass");
    const everyTrialPassed = own.length > 0 && own.every((r) => r.status === "pass");
    const flags: FlagKind[] = [];
    if (lazyPasses.length > 0 && !auditError) flags.push("lazy_passes");
    if (solutionFails && !auditError) flags.push("solution_fails");
    if (auditError) flags.push("audit_error");
    if (noTrialPassed) flags.push("no_trial_passed");
    if (everyTrialPassed) flags.push("every_trial_passed");
    return {
      task: t.name,
      audit: !audited
        ? "skipped"
        : report === undefined
          ? "pending"
          : {
              sound: report.sound,
              contentHash: report.contentHash,
              findings: report.findings.map((f) => ({ audit: f.audit, text: f.text })),
            },
      lazyPasses,
      solutionFails,
      noTrialPassed,
      everyTrialPassed,
      flags,
    };
  });
  const flagged = tasks.filter((t) => t.flags.length > 0).map((t) => t.task);
  const kept = judged.filter((r) => !flagged.includes(r.task));
  const byModelUnflagged = plan.models.map((m) => ({
    model: m.label,
    scripted: m.scripted,
    ...passStats(kept.filter((r) => r.model === m.label)),
  }));
  return { ...summary, flags: { audited, tasks, flagged, byModelUnflagged } };
}

/** The flags in words for the terminal: one line per flagged task, then the rates with and without. */
export function flagsText(summary: EvalSummary): string {
  const flags = summary.flags;
  if (!flags) return "";
  const lines = [
    flags.audited
      ? "checks audited before the trials (scifi check-task; lazy agents scripted)"
      : "checks NOT audited (--no-audit)",
  ];
  for (const t of flags.tasks) {
    if (t.flags.length === 0) continue;
    const lazy = t.lazyPasses.length > 0 ? ` (${t.lazyPasses.map(visible).join(", ")})` : "";
    lines.push(
      `  FLAG ${visible(t.task)}: ${t.flags.map((f) => (f === "lazy_passes" ? `${FLAG_WORDS[f]}${lazy}` : FLAG_WORDS[f])).join("; ")}`,
    );
  }
  const pct = (s: PassStats) =>
    s.n === 0 ? "no verdict" : `${s.passes}/${s.n} ${(s.passRate * 100).toFixed(1)}%`;
  for (const m of summary.byModel) {
    const without = flags.byModelUnflagged.find((u) => u.model === m.model);
    lines.push(
      `  ${visible(m.model)}${m.scripted ? " [SCRIPTED]" : ""}: pass rate ${pct(m)} over all tasks, ${without ? pct(without) : "no verdict"} without the ${flags.flagged.length} flagged task(s)`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** Who played each role, one line per model (the terminal). */
export function rolesText(summary: EvalSummary): string {
  if (!summary.roles?.length) return "";
  const list = (names: string[]) => (names.length ? names.map(visible).join(", ") : "none");
  const lines = summary.roles.map(
    (r) =>
      `  ${visible(r.model)}${r.scripted ? " [SCRIPTED]" : ""}: work ${list(r.roles.work)}; review ${list(r.roles.review)}; control ${list(r.roles.control)}; critique ${list(r.roles.critique)}`,
  );
  return `models by role:\n${lines.join("\n")}\n`;
}
