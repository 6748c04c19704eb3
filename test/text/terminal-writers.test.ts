// Runner text a person reads in a terminal (issue 38.2), by property: an approval listing given the
// generated hostile strings (test/text/hostile.ts) in every field the agent can shape keeps its
// shape. Its lines are the header, `  why:`, one `  | ` line per detail line (a cut announced) and
// `  decide:`; no line holds a line break a terminal obeys (CR, U+2028, NEL) or a control
// character (ANSI), so no agent text can draw over a line or add one of the runner's. The same for
// the live display of a run, and for a word quoted into the scripts scifi writes (read back by bash).
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { renderRequest } from "../../runner/approval/render.ts";
import type { ApprovalRequest } from "../../runner/approval/store.ts";
import { eventLine, plainLine, renderBlock } from "../../runner/run/session/display.ts";
import { DEFAULT_LIMITS } from "../../runner/run/session/limits.ts";
import { shellQuote, visible, visibleBlock } from "../../runner/terminal-text.ts";
import { unfold } from "../approval/unfold.ts";
import { hostileStrings } from "./hostile.ts";

/** Terminal columns a row takes at most (a code point beyond printable ASCII counted as two). */
const width = (row: string) => [...row].reduce((n, c) => n + (c >= " " && c <= "~" ? 1 : 2), 0);
/** Tabs as the listing expands them: spaces to the next multiple of 8. */
function expandTabs(line: string): string {
  let out = "";
  for (const c of line) out += c === "\t" ? " ".repeat(8 - (out.length % 8)) : c;
  return out;
}

/** Line breaks and escape introducers a terminal obeys (built from code points: no control char in a regex literal). */
const OBEYED = ["\r", "\n", "\u2028", "\u2029", "\u0085", "\u001b", "\u009b"];
const obeys = (line: string) => OBEYED.some((c) => line.includes(c));

const request = (s: string): ApprovalRequest => ({
  type: "request",
  id: `job-${s}`,
  action: "submit_job",
  summary: `submit ${s}`,
  why: `the SAM asks ${s}`,
  detail: `#!/bin/bash\n${s}\necho done`,
  facts: {},
  iteration: 1,
  time: "2026-12-04T00:00:00.000Z",
  deadline: "2026-12-04T01:00:00.000Z",
});

describe("an approval listing keeps its lines whatever the agent wrote", () => {
  it("header, why, one marked line per detail line, decide; nothing a terminal would obey", () => {
    for (const s of hostileStrings(250)) {
      const rows = renderRequest(`run-${s}`, request(s), { home: "/h", full: true });
      // Every row fits 80 columns (a terminal soft-wraps none into a row without its mark) and
      // starts with the runner's own words or marks; joined, the rows are the listing's lines.
      for (const row of rows) {
        expect(width(row), `${JSON.stringify(s)}: ${row}`).toBeLessThanOrEqual(80);
        expect(row, JSON.stringify(s)).toMatch(/^(run-| {2}why: | {2}\| | {2}\|\+ | {2}\+ | {2}decide: )/);
      }
      const lines = unfold(rows);
      const detailLines = `#!/bin/bash\n${s}\necho done`.split("\n").length;
      expect(lines, JSON.stringify(s)).toHaveLength(3 + detailLines);
      for (const line of rows) expect(obeys(line), `${JSON.stringify(s)}: ${line}`).toBe(false);
      expect(lines[0]).toBe(`run-${visible(s)} job-${visible(s)}  submit_job: submit ${visible(s)}`);
      expect(lines[1]?.startsWith(`  why: the SAM asks ${visible(s)}; asked `)).toBe(true);
      for (const line of lines.slice(2, -1)) expect(line.startsWith("  | ")).toBe(true);
      expect(lines.slice(2, -1).map((l) => l.slice(4))).toEqual(
        `#!/bin/bash\n${s}\necho done`.split("\n").map((l) => expandTabs(visibleBlock(l))),
      );
      expect(lines.at(-1)?.startsWith(`  decide: scifi approve run-${visible(s)} job-${visible(s)} `)).toBe(
        true,
      );
    }
  });
});

describe("a word quoted for the scripts scifi writes reads back as itself in bash, on one line", () => {
  it("every hostile string: one line of script, and bash gives the same string back", () => {
    const words = hostileStrings(250).filter((s) => !s.includes("\0"));
    const script = words.map((s) => `printf '%s\\0' ${shellQuote(s)}`);
    for (const [i, line] of script.entries()) expect(obeys(line), JSON.stringify(words[i])).toBe(false);
    const out = execFileSync("bash", ["-c", script.join("\n")], { encoding: "utf8" });
    expect(out.split("\0").slice(0, -1)).toEqual(words);
  });
});

describe("the live display of a run keeps its lines whatever a model named", () => {
  it("a tool name, node, notice and result of hostile text: the block's lines, and one line each", () => {
    const status = (s: string) => ({
      runId: "r",
      iteration: 1,
      phase: "work",
      node: `root${s}`,
      step: 1,
      toolCalls: 1,
      lastTool: `bash${s} (failed)`,
      tokens: 0,
      usd: 0,
      elapsedMs: 0,
      stepsLeft: 1,
      toolCallsLeft: 1,
      limits: DEFAULT_LIMITS,
      notice: `waiting ${s}`,
      result: `check root/check-1 FAILED ${s}`,
    });
    const lines = renderBlock(status("plain")).split("\n").length;
    for (const s of hostileStrings(250)) {
      const block = renderBlock(status(s)).split("\n");
      expect(block, JSON.stringify(s)).toHaveLength(lines);
      for (const line of [...block, plainLine(status(s)), eventLine(status(s))])
        expect(obeys(line), `${JSON.stringify(s)}: ${line}`).toBe(false);
      expect(block[1]).toContain(`(last: bash${visible(s)} (failed))`);
    }
  });
});
