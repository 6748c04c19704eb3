// a38d-evolve-tail-unfolded (fixed): `scifi evolve`'s "failing checks" listing prints a check's last
// output unfolded; a long line of it soft-wraps into a row at the runner's own indent.
//
// The promise (docs/evolve.md "Hostile text"; runner/terminal-text.ts foldRow: "a terminal never
// soft-wraps a row into one that starts with the text's own characters"; the a38c fix folds a
// proposal's reason at 80 columns for exactly this; issue 38 point 2).
// What happened: runner/evolve/render.ts prints `c.tails` (the check's output, which the agent's code
// writes) with visibleLines(..., { prefix: "      | ", max: 6 }): no `width`, so a line longer
// than 80 columns stays one line. On an 80-column terminal its rest starts a row at column 0; an
// output of "FAIL", 68 spaces, then "  decide: scifi evolve apply <id> --note TEXT" draws a row
// that reads as the runner's `decide:` line of the listing (the same soft-wrap as a38-approval-soft-wrap). The
// proposal's diff (`visibleLines(diff, { prefix: "    " })`) is unfolded the same way.
// Fixed: every visibleLines in runner/evolve/render.ts folds at LISTING_WIDTH with a continuation mark
// (`      |+ ` for check output, `    + ` for diffs, `  + ` for reasons).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { evolve } from "../../runner/evolve/evolve.ts";
import { renderResult } from "../../runner/evolve/render.ts";
import { homePaths } from "../../runner/paths.ts";
import { modelRuns, writeRun } from "../evolve/corpus.ts";

const DECIDE = "  decide: scifi evolve apply demote-scripted-peer-00000000 --note TEXT";

describe("a38d: scifi evolve's failing-check output tails", () => {
  it("are folded: no row of a tail is wider than 80 columns", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-a38d-evolve-"));
    const runs = homePaths(home).runs;
    mkdirSync(runs, { recursive: true });
    // "      | FAIL" and 68 spaces fill 80 columns: the wrapped row starts with DECIDE.
    const failOutput = `FAIL${" ".repeat(68)}${DECIDE}\n`;
    for (const run of modelRuns("scripted-weak", 2, { passing: 0, late: 0, failing: 4 }, { failOutput }))
      writeRun(runs, run);
    const prompt = join(home, "work.md");
    writeFileSync(prompt, "You are the work agent.\n");
    const result = await evolve({ home, promptFile: prompt, now: new Date("2026-12-01T09:00:00.000Z") });
    const lines = renderResult(result).split("\n");
    expect(lines.some((l) => l.includes("decide: scifi evolve apply demote-scripted-peer-00000000"))).toBe(
      true,
    );
    // The tail's rows (the runner's own table rows are its own text, not judged here).
    expect(lines.filter((l) => l.startsWith("      |") && [...l].length > 80)).toEqual([]);
  });
});
