// a38c-json-out-raw (fixed): `--json` output to the terminal carried agent text with U+2028 and bidi raw.
//
// The promise (issue 38 point 2: "one-line fields with their newlines encoded"; runner/terminal-text.ts
// visibleJson: "A value as JSON for a terminal: JSON.stringify escapes only C0 controls, so every other
// non-printing code point inside a string (bidi overrides, C1 controls, zero-width) is written as a
// `\uXXXX` escape too"; the history writer escapes U+2028 for "every reader"). `scifi status --json`,
// `scifi audit --json` and `scifi approvals --json` go through visibleJson.
// What happened: `scifi evolve --json` (and `scifi run --json` with the outcome's reason, a blocked
// run's report_blocker text; `scifi check-task --json`) print JSON.stringify: a review finding with
// U+2028 splits the JSON line for every reader that breaks lines there (Python's splitlines, many
// log tools), and a U+202E turns the rest of the line around on a terminal that applies bidi.
// Fixed: every command's `--json` goes through visibleJson (runner/cli/commands/*.ts, plan-task.ts,
// helpers/critique/command.ts); the second test holds that no command prints JSON.stringify.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { homePaths } from "../../runner/paths.ts";
import { modelRuns, writeRun } from "../evolve/corpus.ts";
import { REPO } from "../run/harness.ts";

describe("a38c: scifi evolve --json with a finding holding U+2028 and U+202E", () => {
  it("prints them as escapes", () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-a38c-evolve-json-"));
    const runs = homePaths(home).runs;
    mkdirSync(runs, { recursive: true });
    const finding = "late by one\u2028}{ :\u202e reversed";
    for (const run of modelRuns("scripted-weak", 2, { passing: 0, late: 0, failing: 4 }, { finding }))
      writeRun(runs, run);
    const prompt = join(home, "work.md");
    writeFileSync(prompt, "You are the work agent.\n");
    const out = execFileSync(
      process.execPath,
      [join(REPO, "bin", "scifi.js"), "evolve", "--json", "--no-write", "--prompt", prompt],
      { env: { ...process.env, SCIFI_HOME: home }, encoding: "utf8" },
    );
    expect(out).toContain("late by one");
    expect(out.includes("\u2028")).toBe(false);
    expect(out.includes("\u202e")).toBe(false);
  });
});

describe("every command's --json", () => {
  it("is written through visibleJson, never JSON.stringify (runner/cli, the helpers' commands)", () => {
    const files = [
      ...readdirSync(join(REPO, "runner", "cli", "commands")).map((f) =>
        join("runner", "cli", "commands", f),
      ),
      join("runner", "cli", "plan-task.ts"),
      ...readdirSync(join(REPO, "runner", "helpers"), { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => join("runner", "helpers", d.name, "command.ts")),
    ];
    const raw = files.filter((f) => {
      try {
        return readFileSync(join(REPO, f), "utf8").includes("JSON.stringify(");
      } catch {
        return false; // a helper without a command file
      }
    });
    expect(raw).toEqual([]);
  });
});
