// A `tool_output` record (an output elided before any request carried it, kept on the tape whole)
// shows on the report's event list as a preview naming where the rest is: a night of such outputs
// would otherwise put megabytes of tool text on the page.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { AuditTape } from "../../runner/audit/tape.ts";
import { homePaths, runFiles } from "../../runner/paths.ts";
import { renderReport } from "../../runner/report/html.ts";
import { loadRun } from "../../runner/report/load.ts";
import { buildReportModel } from "../../runner/report/model.ts";
import { synthRun } from "./synth.ts";

it("a long tool_output text is shown as a preview with the audit command for the whole text", () => {
  const home = mkdtempSync(join(tmpdir(), "scifi-report-tool-output-"));
  const dir = synthRun(homePaths(home).runs, "run-out", { calls: 6, workCallsPerIteration: 2 });
  const tape = new AuditTape(runFiles(dir).audit, { runId: "run-out" });
  const text = `${"a".repeat(300)}${"ZQXW".repeat(5000)}`;
  tape.append({
    kind: "event",
    event: "tool_output",
    data: { role: "work", callId: "c-1", chars: text.length, text },
  });
  tape.append({
    kind: "event",
    event: "tool_output",
    data: { role: "work", callId: "c-2", chars: 5, text: "short" },
  });
  tape.close();
  const page = renderReport(buildReportModel(loadRun(runFiles(dir).audit, home)));
  expect(page).not.toContain("ZQXW");
  expect(page).toContain(`(${text.length} characters; the whole text: scifi audit show run-out --call`);
  expect(page).toContain("short");
});
