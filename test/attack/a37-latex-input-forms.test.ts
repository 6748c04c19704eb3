// A37-8 (attacker on issue 37, output formats): docs/loop.md refuses LaTeX "`\input`, `\include`,
// ... and the like" by a case-sensitive pattern of command names. LaTeX reads a file with other
// commands it does not list: the kernel's `\InputIfFileExists{f}{}{}` (and `\IfFileExists`, whose
// `\@filef@und` is the file read by the following `\input`), `\@@input` (the TeX primitive under
// LaTeX's \input: the pattern needs the backslash right before "input"), and a name built with
// `\csname in` `put\endcsname`. A compare stage that compiles a .tex output (a report check) would
// typeset the hidden reference. Not run here: no TeX in scifi-sci:local or on this host; the
// commands are the LaTeX kernel's (source2e, ltfiles.dtx). Broke when found (the guard passed it); fixed since, so this passes: the guard passes all three.
// Fix: refuse `input` in any command (`\\[@A-Za-z]*input`, case-insensitive) and `\csname`.
import { describe, expect, it } from "vitest";
import { outputFormatProblem } from "../../runner/run/checks/output-formats.ts";

const REF = "/task/checks/expect\\string ed.txt"; // the name split, so the hidden-name search misses it
const FORMS: [string, string][] = [
  [
    "InputIfFileExists",
    `\\documentclass{article}\\begin{document}\\InputIfFileExists{${REF}}{}{}\\end{document}\n`,
  ],
  ["@@input", `\\documentclass{article}\\makeatletter\\begin{document}\\@@input ${REF} \\end{document}\n`],
  [
    "csname",
    `\\documentclass{article}\\begin{document}\\csname in\\string put\\endcsname{${REF}}\\end{document}\n`,
  ],
];

describe("A37-8: LaTeX outputs that read a file with a command the guard does not list", () => {
  it.each(FORMS)("%s is refused when copied out", (_form, tex) => {
    const problem = outputFormatProblem("out/report.tex", Buffer.from(tex), {
      hiddenNames: ["checks/expected.txt", "expected.txt"],
    });
    expect(problem).toContain("declared output out/report.tex is refused");
  });
});
