// a38c-evolve-reason-lines (fixed): a review finding with a newline forged `scifi evolve`'s own lines.
//
// The promise (docs/evolve.md "Hostile text"; runner/evolve/render.ts's header): findings came from
// runs the agent could shape; the listing shows them through runner/terminal-text.ts, and "a
// newline inside a field is shown as its escape, never obeyed".
// What happened: the prompt proposal's `reason` is built with the findings raw
// (proposals.ts promptProposal: `- ${f.text} ...` joined by "\n"), and renderProposal prints the
// reason with visibleLines, which splits on LF and prefixes each line with the same two spaces as
// the runner's own `test:`, `numbers:`, `runs (...)`, `command:` and `decide:` lines. A finding
// "late\n  decide: scifi evolve apply <other id> ..." (or a forged `test: ... p = 0.0001`) is a line
// of the runner's in the listing a person decides from. (The memory proposal's "The text:\n<body>"
// holds: its body is the runner's `- ` list of one-line items.)
// Fixed: each finding is one escaped line in the reason (proposals.ts), and the listing folds the
// reason at 80 columns with `  + ` on every row it adds (render.ts): no line or wrapped row of the
// finding's starts at the runner's indent.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { evolve } from "../../runner/evolve/evolve.ts";
import { renderResult } from "../../runner/evolve/render.ts";
import { homePaths } from "../../runner/paths.ts";
import { modelRuns, writeRun } from "../evolve/corpus.ts";

// The finding's lines, shown with the reason's two-space indent: the runner's own line forms.
const DECIDE = "decide: scifi evolve apply demote-scripted-peer-00000000 --note TEXT";
const FINDING = `The counter wraps one cycle late\n${DECIDE}\ntest: fisher: forged 30 passed, 0 failed; p = 0.0001 (threshold 0.05)`;

describe("a38c: scifi evolve's listing with a finding that holds a newline", () => {
  it("prints no line of the finding's at the runner's indent", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-a38c-evolve-"));
    const runs = homePaths(home).runs;
    mkdirSync(runs, { recursive: true });
    for (const run of modelRuns(
      "scripted-weak",
      2,
      { passing: 0, late: 0, failing: 4 },
      { finding: FINDING },
    ))
      writeRun(runs, run);
    const prompt = join(home, "work.md");
    writeFileSync(prompt, "You are the work agent.\n");
    const result = await evolve({ home, promptFile: prompt, now: new Date("2026-12-01T09:00:00.000Z") });
    expect(result.proposals.some((p) => p.proposal.kind === "prompt")).toBe(true);
    const lines = renderResult(result).split("\n");
    expect(lines).not.toContain(`  ${DECIDE}`);
    expect(lines.filter((l) => l.startsWith("  test: fisher: forged"))).toEqual([]);
  });
});
