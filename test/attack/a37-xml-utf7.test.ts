import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { grader, referenceTask, refusal } from "./a37-grader.ts";

/** Every character in one UTF-7 base64 shift: no byte of `s` survives as ASCII. */
function utf7(s: string): string {
  const utf16be = Buffer.from(s, "utf16le").swap16();
  return `+${utf16be.toString("base64").replace(/=+$/, "")}-`;
}

const REFERENCE = "/task/checks/expected.txt";
const body = `<!DOCTYPE r [<!ENTITY x SYSTEM "${REFERENCE}">]>\n<r>&x;</r>\n`;
const output = Buffer.from(`<?xml version="1.0" encoding="UTF-7"?>\n${utf7(body)}\n`);

describe("A37-1: an XML external entity written in UTF-7", () => {
  it("is what a grader's lxml resolves to the hidden reference (real Docker, scifi-sci:local)", () => {
    const task = referenceTask("a37-utf7-");
    writeFileSync(join(task, "out", "result.xml"), output);
    const read = grader(
      task,
      "import lxml.etree as e; print(e.parse('/task/out/result.xml').getroot().text, end='')",
    );
    expect(read).toBe("42.125\n");
  }, 60_000);

  it("is refused when copied out", () => {
    const problem = refusal("out/result.xml", output);
    expect(problem).toContain("declared output out/result.xml is refused");
  });
});
