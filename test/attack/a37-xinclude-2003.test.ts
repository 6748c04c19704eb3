import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { grader, referenceTask, refusal } from "./a37-grader.ts";

const output = Buffer.from(
  '<r><include xmlns="http://www.w3.org/2003/XInclude" xml:base="/task/checks/" href="expected&#46;txt" parse="text"/></r>\n',
);

describe("A37-6: an XInclude in the 2003 namespace with xml:base", () => {
  it("is what a grader's lxml xinclude() turns into the hidden reference (real Docker)", () => {
    const task = referenceTask("a37-xi-");
    writeFileSync(join(task, "out", "result.xml"), output);
    const script =
      "import lxml.etree as e\nt = e.parse('/task/out/result.xml')\nt.xinclude()\nprint(t.getroot().text, end='')";
    const read = grader(task, script);
    expect(read).toBe("42.125\n");
  }, 60_000);

  it("is refused when copied out", () => {
    const problem = refusal("out/result.xml", output);
    expect(problem).toContain("declared output out/result.xml is refused");
  });
});
