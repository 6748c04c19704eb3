// The lazy agents' scripts (runner/check-task/agents.ts), without a sandbox: which files the
// constants agent writes (those the Expectation names, never a SAM or a check asset), what the
// empty agent empties, the solution's calls (text, bytes, exec bits, solve.sh), and the script's
// replies per node: a credulous review with one entry per Expectation item.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  expectationFiles,
  lazyScript,
  plausibleConstant,
  solutionCalls,
} from "../../runner/check-task/agents.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import type { SamDocument } from "../../runner/sam/types.ts";

function task(): { dir: string; sam: SamDocument } {
  const dir = mkdtempSync(join(tmpdir(), "scifi-agents-"));
  mkdirSync(join(dir, "checks"));
  writeFileSync(join(dir, "checks", "want.json"), "{}\n");
  writeFileSync(join(dir, "checks", "compare.py"), "import sys\n");
  writeFileSync(join(dir, "data.csv"), "x\n1\n");
  writeFileSync(
    join(dir, "task.md"),
    `---
name: fit
check_assets: [checks/want.json, checks/compare.py]
---
# Fit

## To-do
Fit the data.

## Expectation
- \`fit.json\` holds the fit of \`data.csv\`, and \`plot.png\` shows it.
  \`\`\`check timeout=30s outputs=fit.json
  python3 -c 'import json; json.load(open("/task/fit.json"))' && test -s summary.txt
  \`\`\`
  \`\`\`compare timeout=30s
  python3 checks/compare.py outputs/fit.json checks/want.json
  \`\`\`
- The code is in \`fit.py\`.
`,
  );
  const parsed = parseSamSync(join(dir, "task.md"));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  return { dir, sam: parsed.sam };
}

describe("the lazy agents' scripts", () => {
  it("the constants agent writes every file the Expectation names but the SAM and the check assets", () => {
    const { dir, sam } = task();
    expect(expectationFiles(sam)).toEqual(
      expect.arrayContaining([
        "fit.json",
        "data.csv",
        "plot.png",
        "fit.py",
        "summary.txt",
        "outputs/fit.json",
      ]),
    );
    const script = parse(lazyScript("constants", sam, dir).text) as {
      work: { tool_calls?: { input: { path: string } }[] }[];
    };
    const written = script.work.flatMap((r) => (r.tool_calls ?? []).map((c) => c.input.path)).filter(Boolean);
    expect(written).toContain("fit.json");
    expect(written).not.toContain("checks/want.json");
    expect(written).not.toContain("task.md");
    expect(plausibleConstant("fit.json")).toBe('{"value": 42, "result": 42, "count": 42, "mean": 42.0}\n');
    expect(plausibleConstant("a.csv")).toBe("name,value\nresult,42\n");
    expect(plausibleConstant("n.txt")).toBe("42\n");
  });

  it("the empty agent empties every file but the SAM and the assets; the review passes every item", () => {
    const { dir, sam } = task();
    const lazy = lazyScript("empty", sam, dir);
    const script = parse(lazy.text) as {
      work: { tool_calls?: { name: string; input: { path?: string; content?: string } }[] }[];
      review: { json: { items: { id: string; pass: boolean }[] } }[];
    };
    const calls = script.work.flatMap((r) => r.tool_calls ?? []);
    expect(calls.map((c) => [c.name, c.input.path, c.input.content])).toEqual([
      ["write_file", "data.csv", ""],
      ["report_done", undefined, undefined],
    ]);
    expect(lazy.firstPassSteps).toBe(2);
    expect(lazy.firstPassCalls).toBe(2);
    expect(script.review[0]?.json.items.map((i) => [i.id, i.pass])).toEqual([
      ["root/e1", true],
      ["root/e2", true],
    ]);
    expect(lazy.text.split("\n")[0]).toContain("Scripted model (labelled scripted)");
  });

  it("the solution's files: text written, bytes and exec bits through bash, solve.sh run last", () => {
    const sol = mkdtempSync(join(tmpdir(), "scifi-solution-"));
    writeFileSync(join(sol, "answer.txt"), "6\n");
    writeFileSync(join(sol, "blob.bin"), Buffer.from([0xff, 0x00, 0x01]));
    writeFileSync(join(sol, "solve.sh"), "echo 6 > answer2.txt\n");
    chmodSync(join(sol, "solve.sh"), 0o755);
    const calls = solutionCalls(sol);
    expect(calls[0]).toEqual({ name: "write_file", input: { path: "answer.txt", content: "6\n" } });
    expect(calls[1]?.input.command).toBe(
      `mkdir -p -- "$(dirname -- 'blob.bin')" && printf %s '/wAB' | base64 -d > 'blob.bin'`,
    );
    expect(calls[2]?.input.command).toMatch(/base64 -d > 'solve\.sh' && chmod \+x -- 'solve\.sh'$/);
    expect(calls[3]).toEqual({ name: "bash", input: { command: "bash solve.sh" } });
  });
});
