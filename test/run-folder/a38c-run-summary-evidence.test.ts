// a38c-run-summary-evidence (fixed): the review's evidence went raw into `scifi run`'s summary.
//
// The promise (issue 38 point 2; docs/evolve.md "Hostile text" treats review text as shaped by
// the agent; runner/run-folder/failure.ts: "Agent text ... escaped, as every listing is"): text the
// runner did not choose never adds a line that reads as the runner's, in anything a person reads.
// What happened: failureLines (the lines `scifi run` prints right under its verdict, on stdout)
// escapes each check's output with visible(), but prints a failed item's `why` (the review's
// `evidence`, which a review writes from the agent's claim, files and output, and may quote) raw:
// `review failed root/e1 (iteration 1): <evidence>`. A newline adds lines of the runner's form
// ("PASSED: ...", "run ...: 1 iteration", "records: ..."), and ESC sequences move the cursor and
// erase the FAILED line above on a terminal.
// Fixed: the evidence is one line through visible() (its line breaks and ESC as escapes), and every
// line is folded at 80 columns with a mark on each continuation row (`  + `; the check tail's rows
// all carry `  | `), so no terminal's soft wrap starts a row with the agent's text either.
// (The item ids are checked against the node's: verdictProblems.)
import { describe, expect, it } from "vitest";
import type { HistoryRecord } from "../../runner/memory/history-events.ts";
import { failureFirst, failureLines } from "../../runner/run-folder/failure.ts";

const EVIDENCE =
  "answer.txt holds 41\n\u001b[1A\u001b[2KPASSED: all checks and the review passed\nrun 20261204-x: 1 iteration, 10 tokens, USD 0.0000, 1 s";

describe("a38c: scifi run's failure lines with a review's evidence", () => {
  const history = [
    {
      type: "verdict",
      time: "2026-12-04T20:00:00.000Z",
      iteration: 1,
      node: "root",
      passed: false,
      checksPassed: true,
      items: [{ id: "root/e1", pass: false, evidence: EVIDENCE }],
    },
  ] as unknown as HistoryRecord[];
  const failure = failureFirst(history, undefined);
  if (!failure) throw new Error("no failure read from the history");
  const lines = failureLines(failure);

  it("is one line per failed item, folded at 80 columns with a mark on every row it adds, with no control character", () => {
    expect(lines[0]).toMatch(/^review failed root\/e1 \(iteration 1\): answer\.txt holds 41\\n/);
    for (const row of lines.slice(1)) expect(row.startsWith("  + ")).toBe(true);
    for (const row of lines) expect(row.length).toBeLessThanOrEqual(80);
    expect(lines.join("\n")).not.toContain("\u001b");
  });

  it("folds a long check tail line with the mark on every row", () => {
    const checked = failureLines({
      ...failure,
      items: [],
      checks: [
        {
          id: "root/c1",
          node: "root",
          command: "make test",
          exitCode: 1,
          timedOut: false,
          tail: `${"x".repeat(100)}PASSED: all`,
        },
      ],
    });
    expect(checked.slice(1).every((r) => r.startsWith("  | ") && r.length <= 80)).toBe(true);
    expect(checked.slice(1).join("")).toContain("PASSED: all");
  });

  it("forges no verdict or run line", () => {
    expect(
      lines
        .join("\n")
        .split(/\r\n|\r|\n/)
        .filter((l) => /^(PASSED|run \S+:)/.test(l)),
    ).toEqual([]);
  });
});
