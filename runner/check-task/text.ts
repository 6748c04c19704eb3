// The terminal's account of a check-task audit: one line per audit (what ran, how it came out, the
// run behind it), then each finding, or "sound". Names and reasons go through the terminal's
// escaping: a task folder's or a run's text cannot add a line of the runner's.
import { visible } from "../terminal-text.ts";
import type { AuditReport } from "./audit.ts";

export function auditText(report: AuditReport): string {
  const lines = [
    `check-task ${visible(report.taskDir)} (${visible(report.sam)}) on ${report.backend}${report.cached ? ", cached result" : ""}: the lazy agents are scripted`,
  ];
  const width = Math.max(...report.audits.map((a) => a.audit.length));
  for (const a of report.audits) {
    const failed = a.checks.filter((c) => !c.passed).map((c) => c.id);
    const how =
      a.status === "passed"
        ? "passed"
        : `${a.status}${failed.length > 0 ? ` (failed: ${failed.join(", ")})` : ""}`;
    lines.push(
      `  ${a.audit.padEnd(width)}  ${a.ok ? "ok     " : "FINDING"}  must ${a.expect}, ${visible(how)}${a.runDir ? `  ${visible(a.runDir)}` : ""}`,
    );
  }
  if (report.findings.length === 0) {
    lines.push(
      report.audits.some((a) => a.audit === "solution")
        ? "sound: the checks fail for every lazy agent and on the untouched folder, and pass with the solution"
        : "sound: the checks fail for every lazy agent and on the untouched folder (no --solution: that they can pass is not checked)",
    );
  } else {
    lines.push(`${report.findings.length} finding(s):`);
    for (const f of report.findings) lines.push(`  - ${visible(f.text)}`);
  }
  return `${lines.join("\n")}\n`;
}
