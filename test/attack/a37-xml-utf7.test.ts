// A37-1 (attacker on issue 37, output formats): an XML output declared `encoding="UTF-7"` carries
// an external entity on the hidden reference. UTF-7 writes every character of the DOCTYPE as
// base64 of UTF-16, so neither `<!ENTITY` nor the reference's name appears in the bytes; the guard
// (runner/run/output-formats.ts asTexts: UTF-8, UTF-16, refuses only UTF-32/EBCDIC) passes it.
// lxml 4.9.2 in scifi-sci:local (libxml2 2.9.14, iconv) decodes UTF-7 and expands the entity by
// default, so a compare stage's `lxml.etree.parse(out)` reads the reference as the agent's result.
// Broke when found (the guard passed it); fixed since, so this passes: the guard returns undefined. Fix: refuse XML whose declared encoding is not one the
// runner decodes (UTF-8, UTF-16, ASCII, Latin-1), as UTF-32/EBCDIC already are.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { outputFormatProblem } from "../../runner/run/output-formats.ts";

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
    const task = mkdtempSync(join(tmpdir(), "a37-utf7-"));
    mkdirSync(join(task, "checks"));
    mkdirSync(join(task, "out"));
    writeFileSync(join(task, "checks", "expected.txt"), "42.125\n");
    writeFileSync(join(task, "out", "result.xml"), output);
    const read = execFileSync(
      "docker",
      [
        "run",
        "--rm",
        "--network=none",
        "-v",
        `${task}:/task:ro`,
        "scifi-sci:local",
        "python3",
        "-c",
        "import lxml.etree as e; print(e.parse('/task/out/result.xml').getroot().text, end='')",
      ],
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
