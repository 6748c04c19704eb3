// Found by the issue-25 attacker session (was test/open/a25-listings.pending.ts); fixed: terminal-text.ts
// escapes the default-ignorable code points and visibleJson escapes every listing's JSON.
// Attacker session for issue 25 (A25-4, A25-5): code points a terminal does not print that still
// reach it from the listings a person decides on.
//
// Docs promise (docs/approval.md, "What the person reads"): in every terminal listing "control
// characters and non-printing code points (C0, DEL, C1, bidi overrides, zero-width and other format
// characters, ...) are shown as escapes ..., never sent"; the listing is `scifi approvals [--json]`.
//
// What happened:
// - A25-4: runner/terminal-text.ts escapes the categories Cc, Cf, Zl, Zp, Co, Cs, Cn and spaces,
//   but not the default-ignorable code points outside them, which terminals draw as nothing or as
//   blank: U+034F COMBINING GRAPHEME JOINER, U+FE0F and U+E0100 variation selectors, U+180B
//   Mongolian selector, U+17B4 (all Mn, zero width), U+115F, U+3164, U+FFA0 Hangul fillers (Lo,
//   blank). So `data.test` and `data\u034f.test` read the same in `scifi approvals` and every
//   other listing of the routine (memory list, status, audit show, plan, the report's HTML).
// - A25-5: `scifi approvals --json` prints JSON.stringify's output, which escapes only C0: a
//   U+202E bidi override, a U+009B C1 CSI and U+200B reach the terminal raw.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { renderRequest } from "../../runner/approval/render.ts";
import type { ApprovalRequest } from "../../runner/approval/store.ts";
import { runScifi } from "../helpers/cli.ts";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

const INVISIBLE = ["\u034f", "\ufe0f", "\u{e0100}", "\u180b", "\u17b4", "\u115f", "\u3164", "\uffa0"];

function request(text: string): ApprovalRequest {
  return {
    type: "request",
    id: "network-1a2b3c4d",
    action: "network",
    summary: `network access ${text}`,
    why: "the SAM's approval: [network]",
    detail: `host ${text}`,
    facts: {},
    iteration: 1,
    time: new Date().toISOString(),
    deadline: new Date(Date.now() + 3_600_000).toISOString(),
    waits: false,
  };
}

describe("A25: what a listing still sends raw", () => {
  it("A25-4: zero-width and blank-drawn default-ignorable code points are shown as escapes", () => {
    const shown = renderRequest("r1", request(INVISIBLE.map((c) => `data${c}.test`).join(" ")), {
      home: "/h",
    }).join("\n");
    const raw = INVISIBLE.filter((c) => shown.includes(c)).map((c) => c.codePointAt(0)?.toString(16));
    expect(raw).toEqual([]);
  });

  it("A25-5: scifi approvals --json sends no bidi override, C1 or zero-width code point raw", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-a25-json-"));
    roots.push(home);
    mkdirSync(join(home, "runs", "r1"), { recursive: true });
    const hostile = request("ok.test\u202e\u009b8m\u200bevil.test");
    writeFileSync(join(home, "runs", "r1", "approvals.jsonl"), `${JSON.stringify(hostile)}\n`);
    const r = await runScifi(home, ["approvals", "--json"], 30_000);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(1);
    expect([...r.stdout].filter((c) => /[\u202e\u009b\u200b]/u.test(c))).toEqual([]);
  });
});
