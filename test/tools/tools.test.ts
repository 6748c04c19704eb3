// Tool definitions as the model sees them, input validation, and the pure parts of each tool.
import { describe, expect, it } from "vitest";
import type { Sandbox } from "../../runner/sandbox/types.ts";
import { checkCommand } from "../../runner/tools/allowlist.ts";
import { applyEdit } from "../../runner/tools/edit-file.ts";
import { numberLines } from "../../runner/tools/read-file.ts";
import { reviewTools, runTool, toolSpecs, workTools } from "../../runner/tools/registry.ts";
import type { ToolContext } from "../../runner/tools/tool.ts";
import { capText } from "../../runner/tools/truncate.ts";

/** A context whose sandbox must never be reached: validation has to stop bad input first. */
const unreachable = new Proxy({} as Sandbox, {
  get(_, prop) {
    throw new Error(`the sandbox was used (${String(prop)}) although the input was invalid`);
  },
});
const ctx: ToolContext = { sandbox: unreachable, bashTimeoutMs: 10_000, maxOutputChars: 2000 };

describe("tool definitions as the model sees them", () => {
  it("work tools: names, descriptions and JSON Schemas", () => {
    expect(toolSpecs(workTools)).toMatchSnapshot();
  });

  it("review tools are read-only", () => {
    expect([...reviewTools.keys()].sort()).toEqual(["bash", "glob", "grep", "read_file"]);
    for (const tool of reviewTools.values()) expect(["read", "exec"]).toContain(tool.effect);
  });

  it("every description is a non-empty Markdown file", () => {
    for (const spec of toolSpecs(workTools)) expect(spec.description.length).toBeGreaterThan(80);
  });
});

describe("input validation before anything runs", () => {
  it("rejects a missing field with its path", async () => {
    const out = await runTool(workTools, "edit_file", { path: "a.txt", new_text: "x" }, ctx);
    expect(out.ok).toBe(false);
    expect(out.output).toMatch(/^Invalid input for tool 'edit_file': old_text: /);
  });

  it("rejects a wrong type", async () => {
    const out = await runTool(workTools, "read_file", { path: "a", offset: "3" }, ctx);
    expect(out).toMatchObject({ ok: false });
    expect(out.output).toContain("offset");
  });

  it("answers an unknown tool with the list of valid ones", async () => {
    const out = await runTool(workTools, "rm_rf", {}, ctx);
    expect(out).toEqual({
      ok: false,
      output:
        "Unknown tool 'rm_rf'. Available tools: bash, read_file, write_file, edit_file, glob, grep, report_done, report_blocker.",
    });
  });

  it("refuses a command off the allowlist before reaching the sandbox", async () => {
    const out = await runTool(
      workTools,
      "bash",
      { command: "make && curl x" },
      { ...ctx, allowCommands: ["make"] },
    );
    expect(out.ok).toBe(false);
    expect(out.output).toContain("'curl'");
  });

  it("report_done and report_blocker return typed signals", async () => {
    const done = await runTool(workTools, "report_done", { claim: "c", summary: "s" }, ctx);
    expect(done.signal).toEqual({ type: "done", claim: "c", summary: "s" });
    const blocked = await runTool(workTools, "report_blocker", { reason: "r", needs: "n" }, ctx);
    expect(blocked.signal).toEqual({ type: "blocker", reason: "r", needs: "n" });
  });
});

describe("allowlist parsing", () => {
  const allow = ["make", "ls", "grep", "echo", "cat", "./run", "sh"];
  const refused: [string, string][] = [
    ["ls\ncurl x", "'curl'"],
    ["ls; rm -rf /", "'rm'"],
    ["make && wget y", "'wget'"],
    ["false || nc -l 1", "'nc'"],
    ["cat f | python3 -c 1", "'python3'"],
    ["echo $(id)", "'id'"],
    ["echo `whoami`", "'whoami'"],
    ["cat <(curl z)", "'curl'"],
    ["A=$(curl z) ls", "'curl'"],
    ["f() { curl z; }; f", "'curl'"],
    ["(cd /; rm x)", "'cd'"],
    ["$CMD x", "not a plain word"],
    ["'ls'x", "not a plain word"],
    ["export A=1", "'export'"],
    ["eval ls", "'eval'"],
    ["echo 'unterminated", "does not parse"],
    ["sh -c 'ls; curl x'", "inside 'sh -c': not on this task's command allowlist: 'curl'"],
    ["sh -c \"sh -c 'wget y'\"", "'wget'"],
    ['sh -c "$S"', "not a plain quoted string"],
  ];
  for (const [command, reason] of refused) {
    it(`refuses ${JSON.stringify(command)}`, () => {
      const verdict = checkCommand(command, allow);
      expect(verdict.ok).toBe(false);
      if (!verdict.ok) expect(verdict.reason).toContain(reason);
    });
  }

  it("allows allowed programs joined by operators, pipes and redirections", () => {
    expect(checkCommand("make 2>&1 | grep -c ok > out.txt && ./run; ls", allow)).toEqual({
      ok: true,
      programs: ["make", "grep", "./run", "ls"],
    });
  });

  it("checks the script of an allowed shell's -c", () => {
    expect(checkCommand("sh -c 'make && ls'", allow)).toEqual({ ok: true, programs: ["sh", "make", "ls"] });
  });

  it("matches a path only when the list names it exactly (the bare name is looked up on the fixed PATH)", () => {
    const verdict = checkCommand("/usr/bin/make -j2", allow);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toContain("write the bare name 'make'");
    expect(checkCommand("./run", allow).ok).toBe(true);
  });
});

describe("edit_file matching", () => {
  it("replaces a unique match and reports the change with its line", () => {
    const result = applyEdit("a\nb\nc\n", "b", "B");
    expect(result).toEqual({ ok: true, after: "a\nB\nc\n", report: "@@ line 2 @@\n- b\n+ B" });
  });

  it("refuses a text that occurs twice", () => {
    const result = applyEdit("x = 1\nx = 1\n", "x = 1", "x = 2");
    expect(result).toEqual({
      ok: false,
      error: "old_text occurs 2 times; include more surrounding lines so it is unique.",
    });
  });

  it("refuses a text that is not there", () => {
    expect(applyEdit("abc", "abd", "x").ok).toBe(false);
  });
});

describe("read_file numbering and output capping", () => {
  it("numbers lines from the offset and says how to read on", () => {
    expect(numberLines("l1\nl2\nl3\nl4\n", 2, 2)).toBe(
      "2\tl2\n3\tl3\n(lines 2-3 of 4; use offset 4 for more)",
    );
  });

  it("says when the offset is past the end", () => {
    expect(numberLines("a\n", 5, 10)).toBe("(the file has 1 lines; offset 5 is past the end)");
  });

  it("keeps head and tail of long output", () => {
    const text = `HEAD${"x".repeat(10_000)}TAIL`;
    const capped = capText(text, 1000);
    expect(capped.startsWith("HEAD")).toBe(true);
    expect(capped.endsWith("TAIL")).toBe(true);
    expect(capped).toContain("characters cut by scifi");
    expect(capped.length).toBeLessThan(1100);
  });
});
