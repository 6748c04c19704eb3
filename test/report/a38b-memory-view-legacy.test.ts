// The report shows the group memory view a run's pre-scan got by building it again from the group's
// file and matching the hash on the tape. a38b moved each line's source note before the suggestion
// (`- (run X): ...`, test/memory/a38b-memory-view-count.test.ts); a run from before that saw the note
// after it, and its report must still find that view, not call the file changed.
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { AuditTape } from "../../runner/audit/tape.ts";
import { formatEntry } from "../../runner/memory/entries.ts";
import { memoryView } from "../../runner/memory/view.ts";
import { homePaths, runFiles } from "../../runner/paths.ts";
import { loadRun } from "../../runner/report/load.ts";
import { buildReportModel } from "../../runner/report/model.ts";
import { listOf } from "../../runner/run/memory-writes.ts";
import { sha256 } from "../../runner/sha256.ts";
import { synthRun } from "./synth.ts";

const BUDGET = 1500;
const BEFORE = "2026-11-30T00:59:00.000Z";

/** A run whose pre-scan got `view` of group `g` (recorded as the loop records it). */
function runWithView(noteAfter: boolean): { text: string; model: ReturnType<typeof buildReportModel> } {
  const home = mkdtempSync(join(tmpdir(), "scifi-a38b-view-"));
  const file = homePaths(home).groupMemory("g");
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(
    file,
    ["r1", "r2"]
      .map((run, i) =>
        formatEntry({
          id: `${run}/final/group`,
          time: `2026-11-2${i + 1}T09:00:00.000Z`,
          runId: run,
          role: "final_review",
          title: "fit: failed",
          body: listOf([
            "Run the checks before report_done",
            i === 0 ? "Plot the residuals" : "Fix the seed",
          ]),
        }),
      )
      .join(""),
  );
  const view = memoryView(readFileSync(file, "utf8"), { budgetTokens: BUDGET, before: BEFORE, noteAfter });
  const dir = synthRun(homePaths(home).runs, "run-view", { calls: 10, workCallsPerIteration: 3 });
  const hash = sha256(view.text);
  appendFileSync(
    runFiles(dir).history,
    `${JSON.stringify({
      seq: 999,
      time: "2026-11-30T01:00:00.000Z",
      type: "memory_view",
      iteration: 1,
      level: "group",
      ref: "memory:group:g",
      sha256: hash,
      entries: view.entries,
      entryCount: view.entries.length,
      items: view.items.length,
      omitted: view.omitted,
      tokens: view.tokens,
      budget: BUDGET,
      before: BEFORE,
    })}\n`,
  );
  const tape = new AuditTape(runFiles(dir).audit, { runId: "run-view" });
  tape.append({ kind: "injected", role: "prescan", source: "memory", ref: "memory:group:g", sha256: hash });
  tape.close();
  return { text: view.text, model: buildReportModel(loadRun(runFiles(dir).audit, home)) };
}

describe("a38b: the report's group memory view", () => {
  it("finds a view of today's form (the runner's note first)", () => {
    const { text, model } = runWithView(false);
    expect(text).toContain("- (×2, runs r2, r1): Run the checks before report\\_done");
    expect(model.injected[0]?.text).toBe(text);
  });

  it("finds a view an older run got (the note after the suggestion)", () => {
    const { text, model } = runWithView(true);
    expect(text).toContain("- Run the checks before report\\_done (×2, runs r2, r1)");
    expect(model.injected[0]?.missing).toBeUndefined();
    expect(model.injected[0]?.text).toBe(text);
  });
});
