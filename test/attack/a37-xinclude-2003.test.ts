// A37-6 (attacker on issue 37, output formats): docs/loop.md refuses XML with an XInclude, found by
// the 2001 namespace URI or a prefixed `<x:include`. libxml2 (lxml's xinclude()) also takes the
// 2003 namespace, as a default namespace needs no prefix; `xml:base` (not among the attributes the
// guard reads) carries the absolute folder, and `href="expected&#46;txt"` is a plain relative name
// after the guard expands it, while the hidden-name search looks at the raw bytes, where
// `expected.txt` is not. A grader that resolves includes (tree.xinclude()) reads the reference.
// Broke when found (the guard passed it); fixed since, so this passes: the guard returns undefined. Fix: refuse any XInclude namespace
// (`/XInclude` in a namespace URI), read `xml:base`, and search hidden names after expanding
// character references as well.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { outputFormatProblem } from "../../runner/run/output-formats.ts";

const output = Buffer.from(
  '<r><include xmlns="http://www.w3.org/2003/XInclude" xml:base="/task/checks/" href="expected&#46;txt" parse="text"/></r>\n',
);

describe("A37-6: an XInclude in the 2003 namespace with xml:base", () => {
  it("is what a grader's lxml xinclude() turns into the hidden reference (real Docker)", () => {
    const task = mkdtempSync(join(tmpdir(), "a37-xi-"));
    mkdirSync(join(task, "checks"));
    mkdirSync(join(task, "out"));
    writeFileSync(join(task, "checks", "expected.txt"), "42.125\n");
    writeFileSync(join(task, "out", "result.xml"), output);
    const script =
      "import lxml.etree as e\nt = e.parse('/task/out/result.xml')\nt.xinclude()\nprint(t.getroot().text, end='')";
    const read = execFileSync(
      "docker",
      ["run", "--rm", "--network=none", "-v", `${task}:/task:ro`, "scifi-sci:local", "python3", "-c", script],
      { encoding: "utf8" },
    );
    expect(read).toBe("42.125\n");
  }, 60_000);

  it("is refused when copied out", () => {
    const problem = outputFormatProblem("out/result.xml", output, {
      hiddenNames: ["checks/expected.txt", "expected.txt"],
    });
    expect(problem).toContain("declared output out/result.xml is refused");
  });
});
