// The live display's text: the block cut to the terminal's width with an ellipsis, event lines
// wrapped at spaces (never mid-word) and carrying their iteration.
import { describe, expect, it } from "vitest";
import { eventLine, fitBlock, wrapWords } from "../../../runner/run/session/display.ts";
import type { RunStatus } from "../../../runner/run/session/status.ts";

describe("live display text", () => {
  it("cuts each block line to the width, with an ellipsis, and leaves short ones alone", () => {
    const block = `scifi run ${"x".repeat(100)}\n  short`;
    const fitted = fitBlock(block, 80).split("\n");
    expect([...(fitted[0] ?? "")].length).toBe(80);
    expect(fitted[0]?.endsWith("…")).toBe(true);
    expect(fitted[1]).toBe("  short");
  });

  it("wraps event lines at spaces, indenting what follows", () => {
    const lines = wrapWords(
      "iteration 2 review of root FAILED: checks failed; the review failed root/e1",
      30,
      "    ",
    );
    expect(lines).toEqual([
      "iteration 2 review of root",
      "    FAILED: checks failed; the",
      "    review failed root/e1",
    ]);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(30);
  });

  it("an event line names its iteration", () => {
    const status = { iteration: 3, result: "check root/check-1 FAILED (exit 1)" } as RunStatus;
    expect(eventLine(status)).toBe("iteration 3 check root/check-1 FAILED (exit 1)");
  });
});
