// a38d-failure-command-raw (fixed): `scifi run`'s failure lines print a failed check's command raw:
// neither escaped nor folded.
//
// The promise (issue 38 point 2: text the runner did not choose (here the SAM's, which `scifi import`
// takes from a third-party dataset and the daemon from whoever drops a task in its inbox) cannot
// "add a line that reads as the runner's"; runner/run-folder/failure.ts escapes and folds the output
// tail and the review's evidence at 80 columns for that reason; runner/terminal-text.ts: every
// terminal listing of such text goes through visible()).
// What happened: failureLines writes `failed check <id> (...): ${oneLine(c.command)}`; oneLine cuts
// at the first LF only, so a CR, an ESC sequence or a U+2028 in the command reaches the terminal
// (`make test\r\x1b[2Kreview passed root/e1` redraws the line as something else), and a long
// first line soft-wraps into a row of the command's own text at column 0. (checkSam keeps an ESC in a
// check's command: `make test \x1b[2K...` validates with no diagnostic and is the command as parsed.)
// Fixed: the check's command goes through visible() and the line is folded at 80 columns with `  + `
// on every row it adds (runner/run-folder/failure.ts).
import { describe, expect, it } from "vitest";
import { failureLines } from "../../runner/run-folder/failure.ts";

describe("a38d: a failed check's command in scifi run's failure lines", () => {
  it("is escaped and folded at 80 columns", () => {
    const command = `make test\r\u001b[2Kreview passed root/e1\u2028${"x".repeat(70)} review failed root/e9 (iteration 1): none`;
    const lines = failureLines({
      iteration: 1,
      checks: [{ id: "c1", node: "root", command, exitCode: 1, timedOut: false, tail: "FAIL" }],
      items: [],
    });
    for (const line of lines) {
      for (const c of ["\r", "\u001b", "\u2028"]) expect(line.includes(c)).toBe(false);
      expect([...line].length).toBeLessThanOrEqual(80);
    }
  });
});
