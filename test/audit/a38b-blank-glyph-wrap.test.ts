// Attack on issue 38's runner text in terminal listings (runner/terminal-text.ts visible and
// visiblePreview, here through `scifi audit show`: runner/audit/render.ts), found by attacker a38b.
// Fixed: visible() and visibleBlock() escape U+2800 too (the other blank-drawn code points were
// already escaped: every White_Space but U+0020, and the default-ignorables, Hangul fillers among them). Related to a38-approval-soft-wrap (a line padded with spaces soft-wraps into a row
// without the listing's prefix), but through a door that fix would not close: one-line previews
// already fold runs of blanks, and a blank that is not a space passes.
// Doc promise: docs/approval.md "What the person reads": every terminal listing (`scifi audit show`
// among them) shows "non-printing code points (... zero-width and other format characters, line
// separators, spaces other than U+0020)" as escapes, so "no field adds a line to the listing";
// trust.md rule 11 and 14.
// What happened: U+2800 BRAILLE PATTERN BLANK is a symbol (category So), not a space or format
// character, so visible() passes it, and a terminal draws it as one blank cell. The work agent ends
// a reply with 71 of them and then the transcript's own line form: `scifi audit show` prints
// `   text: <preview>` as one line, and on an 80-column terminal the forged `#3 ... review -> ...`
// and `   json: {"pass":true,...}` start rows of their own, exactly as the runner's lines do.
// Suggested fix: treat every code point a terminal draws blank as a space (U+2800, U+3164, U+FFA0,
// U+115F/U+1160 and the like: escape them, or fold them with whitespace), and fold long one-line
// fields at a fixed width with the prefix on every piece.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderTranscript } from "../../runner/audit/render.ts";
import { summarizeTape } from "../../runner/audit/summary.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { visible } from "../../runner/terminal-text.ts";

const BLANK = "\u2800";

/** What a terminal `width` columns wide shows of `text`: each line cut into rows (one cell a code point). */
function rows(text: string, width: number): string[] {
  return text.split("\n").flatMap((line) => {
    const cells = [...line];
    const out: string[] = [];
    for (let i = 0; i < cells.length; i += width) out.push(cells.slice(i, i + width).join(""));
    return out.length ? out : [""];
  });
}

function tapeWithReply(reply: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "scifi-a38b-blank-")), "audit.jsonl");
  const tape = new AuditTape(file, { runId: "run-1", key: null });
  tape.append({
    kind: "call",
    role: "work",
    iteration: 1,
    provider: "scripted",
    model: "scripted",
    entry: "scripted",
    request: {
      kind: "work",
      rank: 1,
      system: "s",
      messages: [{ role: "user", content: [{ type: "text", text: "go" }] }],
    },
    response: { content: [{ type: "text", text: reply }], stopReason: "end_turn" },
    usage: { input: 1, output: 1, cacheWrite: 0, cacheRead: 0, reasoning: 0 },
    costUsd: 0,
    latencyMs: 1,
    attempts: [],
  });
  tape.close();
  return file;
}

describe("a38b: blank glyphs in a terminal listing", () => {
  it("U+2800 is shown as an escape, like the other blanks", () => {
    expect(visible(`a${BLANK}b`)).toBe("a\\u{2800}b");
  });

  it("every code point a terminal draws blank is shown as an escape", () => {
    // Unicode White_Space but U+0020, the Hangul fillers, the line separators, zero-width ones.
    const blanks = [
      0x09, 0x0b, 0x0c, 0x85, 0xa0, 0x115f, 0x1160, 0x1680, 0x180e, 0x2000, 0x200a, 0x200b, 0x2028, 0x2029,
      0x202f, 0x205f, 0x2800, 0x3000, 0x3164, 0xfeff, 0xffa0,
    ];
    for (const code of blanks) {
      const c = String.fromCodePoint(code);
      expect(visible(`a${c}b`), `U+${code.toString(16)}`).not.toContain(c);
    }
  });

  it("an agent's reply adds no row that reads as a call of the transcript on an 80-column terminal", () => {
    const forged1 = "#3 2026-12-04T15:00:00.000Z review (iter 1) -> scripted/scripted";
    const forged2 = '   json: {"pass":true,"findings":[],"fixes":[]}';
    // `   text: ` is 9 columns: the first forged line starts at column 80, the second at 160.
    const reply = `ok${BLANK.repeat(69)}${forged1}${BLANK.repeat(80 - forged1.length)}${forged2}`;
    const transcript = renderTranscript(summarizeTape(readTape(tapeWithReply(reply))));
    const calls = rows(transcript, 80).filter((row) => /^#\d+ \S+ \w+/.test(row));
    expect(calls, "rows that read as the transcript's call lines").toHaveLength(1);
    expect(rows(transcript, 80)).not.toContain(forged2);
  });
});
