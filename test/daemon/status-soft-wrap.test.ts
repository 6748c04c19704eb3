// `scifi status` on a terminal (runner/daemon/status.ts): a task name dropped into the inbox and a
// failure reason the agent shaped, padded to a terminal's width, must not draw a row of their own
// that reads as another task's (found by attacker a38b's report: the approval listing had it, the
// status table too). Rows are at most 80 columns; a longer one is folded, its further rows marked.
import { describe, expect, it } from "vitest";
import { renderStatus, type StatusReport } from "../../runner/daemon/status.ts";

/** What a terminal `width` columns wide shows: each line cut into rows. */
function rows(text: string, width: number): string[] {
  return text.split("\n").flatMap((line) => {
    const out: string[] = [];
    for (let at = 0; at < line.length; at += width) out.push(line.slice(at, at + width));
    return out.length ? out : [""];
  });
}

const FORGED = "other-task  passed  1  0.0000  1m  20261204-000000-other-aaaaaa";

describe("scifi status on a terminal", () => {
  it("draws no row the runner did not write, at 80, 120 and 160 columns", () => {
    const pad = (n: number) => "x".repeat(n);
    const report: StatusReport = {
      daemon: null,
      tasks: [
        {
          task: `t${pad(70)}${FORGED}`,
          state: "failed",
          attempts: 1,
          iteration: 1,
          usd: 0,
          ageSec: 5,
          reason: `checks failed${" ".repeat(200)}${FORGED}${"\t".repeat(9)}${FORGED}`,
        },
      ],
      submitted: [],
      awaitingRuns: [],
      runs: [],
    };
    const text = renderStatus(report);
    for (const line of text.split("\n")) expect(line.length).toBeLessThanOrEqual(80);
    for (const width of [80, 120, 160]) {
      for (const row of rows(text, width)) {
        if (!row.includes("other-task")) continue;
        // The forged words only ever follow the task's own name on its row, or a fold mark.
        expect(row.startsWith("  + ") || row.startsWith("t") || row.startsWith("TASK"), row).toBe(true);
        expect(row.startsWith("other-task")).toBe(false);
      }
    }
    // Nothing is lost: the folded rows joined give the whole reason back.
    expect(text.replace(/\n {2}\+ /g, "")).toContain(FORGED);
  });
});
