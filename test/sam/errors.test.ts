// One test per error class, with the exact message, line and column. The SAM text is inline so the
// position can be read off the test itself.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatDiagnostic } from "../../runner/sam/diagnostics.ts";
import { parseSamString, parseSamSync } from "../../runner/sam/parse.ts";

const FILE = "/virtual/task.md";
const BODY = "# Task\n\n## To-do\nDo it.\n\n## Expectation\n- Done.\n";

function errorsOf(text: string): string[] {
  const result = parseSamString(text, FILE);
  expect(result.ok).toBe(false);
  return result.diagnostics.map(formatDiagnostic);
}

describe("SAM error classes", () => {
  it("malformed YAML", () => {
    expect(errorsOf(`---\nname: x\nwalltime: "2h\n---\n${BODY}`)).toEqual([
      '/virtual/task.md:3:14: error: malformed YAML front matter: Missing closing "quote',
    ]);
  });

  it("front matter that is never closed", () => {
    expect(errorsOf(`---\nname: x\n${BODY}`)).toEqual([
      "/virtual/task.md:1:1: error: front matter starts with `---` on line 1 but is never closed; end it with a line `---`",
    ]);
  });

  it("missing required sections", () => {
    expect(errorsOf("# Task\n\n## Context\nWhy.\n")).toEqual([
      "/virtual/task.md:1:1: error: SAM `Task` has no Expectation section; add `## Expectation` listing what must be true when it is done",
      "/virtual/task.md:1:1: error: SAM `Task` has no To-do section; add `## To-do` saying what to do",
    ]);
  });

  it("empty Expectation", () => {
    expect(errorsOf("# Task\n\n## To-do\nDo it.\n\n## Expectation\n\n")).toEqual([
      "/virtual/task.md:6:1: error: empty Expectation in `Task`; list what must be true when the task is done (one item per criterion, optionally with a `check` block)",
    ]);
  });

  it("duplicate sections, also through an alias", () => {
    expect(errorsOf(`${BODY}\n## Acceptance\n- Again.\n`)).toEqual([
      "/virtual/task.md:9:1: error: duplicate Expectation section in `Task` (first at line 6); merge them into one",
    ]);
  });

  it("a section outside any SAM", () => {
    expect(errorsOf("## To-do\nDo it.\n\n## Expectation\n- Done.\n")).toEqual([
      "/virtual/task.md:1:1: error: section `To-do` is outside any SAM: a SAM starts with a title heading (e.g. `# Fit a Gaussian`) and its sections are one level below it",
    ]);
  });

  it("a section heading at the wrong level", () => {
    // The misplaced Expectation is reported once, not again as "missing".
    expect(errorsOf("# Task\n\n## To-do\nDo it.\n\n### Expectation\n- Done.\n")).toEqual([
      "/virtual/task.md:6:1: error: section heading `Expectation` is inside the To-do section of `Task`: sections and sub-SAMs of `Task` are level 2 headings (`## Expectation`); a sub-SAM's own sections go under its `## Sub-SAM: name` heading",
    ]);
  });

  it("a sub-SAM too deep for Markdown's six heading levels", () => {
    const levels = ["# R", "## To-do\nr", "## Expectation\n- r"];
    for (let depth = 2; depth <= 6; depth++) {
      levels.push(`${"#".repeat(depth)} Sub-SAM: s${depth}`);
      if (depth < 6)
        levels.push(`${"#".repeat(depth + 1)} To-do\nx`, `${"#".repeat(depth + 1)} Expectation\n- y`);
    }
    expect(errorsOf(levels.join("\n\n"))).toEqual([
      "/virtual/task.md:41:1: error: sub-SAM `s6` is a level 6 heading, so its sections would need level 7, which Markdown does not have; move it into its own file and list that file under `subtasks`",
    ]);
  });

  it("unknown metadata key with a suggestion", () => {
    expect(errorsOf(`---\nwalltme: 2h\n---\n${BODY}`)).toEqual([
      "/virtual/task.md:2:1: error: unknown metadata key `walltme`; did you mean `walltime`?",
    ]);
  });

  it("wrong type says what was expected, with an example", () => {
    expect(errorsOf(`---\niterations: many\n---\n${BODY}`)).toEqual([
      "/virtual/task.md:2:13: error: `iterations`: expected a positive whole number, got the text `many`; for example `iterations: 10`",
    ]);
  });

  it("invalid units", () => {
    expect(errorsOf(`---\nwalltime: 3 weeks\nmemory: 4X\n---\n${BODY}`)).toEqual([
      "/virtual/task.md:2:11: error: `walltime`: invalid duration `3 weeks`; durations take a unit s, m, h or d, e.g. `90m`, `2h` or `1h30m`, or are `H:MM:SS`",
      "/virtual/task.md:3:9: error: `memory`: invalid size `4X`; sizes take a unit K, M, G or T, powers of 1024 (`4G` = 4 GiB), e.g. `4G` or `512Mi`",
    ]);
  });

  it("bad mount entries", () => {
    expect(errorsOf(`---\nmounts:\n  - /data:/in:wx\n  - {host: /a, container: rel}\n---\n${BODY}`)).toEqual([
      "/virtual/task.md:3:5: error: bad mount entry: mode `wx` is not `ro` or `rw`",
      "/virtual/task.md:4:5: error: bad mount entry: container path `rel` must be absolute, e.g. `/data`",
    ]);
  });

  it("a file that is not UTF-8", () => {
    const dir = mkdtempSync(join(tmpdir(), "sam-utf8-"));
    const file = join(dir, "task.md");
    writeFileSync(
      file,
      Buffer.concat([Buffer.from("# T\n\n## To-do\nna"), Buffer.from([0xff, 0xfe]), Buffer.from("\n")]),
    );
    const result = parseSamSync(file);
    expect(result.diagnostics.map(formatDiagnostic)).toEqual([
      `${file}:4:3: error: file is not valid UTF-8 (byte 0xff at byte offset 16); save the file with UTF-8 encoding`,
    ]);
  });

  it("a file larger than 1 MiB", () => {
    const dir = mkdtempSync(join(tmpdir(), "sam-large-"));
    const file = join(dir, "task.md");
    writeFileSync(file, `${BODY}\n${"x".repeat(1024 * 1024)}\n`);
    const result = parseSamSync(file);
    expect(result.diagnostics.map(formatDiagnostic)).toEqual([
      `${file}:1:1: error: file is 1.0 MiB, larger than the 1 MiB limit for SAM files; move data into separate files next to the SAM and refer to them`,
    ]);
  });

  it("hostile YAML: custom tags, __proto__ keys, alias bombs and JS front matter", () => {
    expect(errorsOf(`---\nimage: !python/object x\n---\n${BODY}`)).toEqual([
      "/virtual/task.md:2:8: error: hostile YAML: custom tag `!python/object` is not allowed in SAM metadata; write a plain value",
    ]);
    expect(errorsOf(`---\n__proto__: {polluted: true}\n---\n${BODY}`)).toEqual([
      "/virtual/task.md:2:1: error: hostile YAML: key `__proto__` is not allowed (it would alter object prototypes); remove it",
    ]);
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (const [name, prev] of [
      ["b", "a"],
      ["c", "b"],
      ["d", "c"],
    ]) {
      bomb.push(`${name}: &${name} [${Array(10).fill(`*${prev}`).join(", ")}]`);
    }
    expect(errorsOf(`---\n${bomb.join("\n")}\n---\n${BODY}`)).toEqual([
      "/virtual/task.md:3:8: error: hostile YAML: aliases expand beyond 100 nodes (an alias bomb); write the values out instead",
    ]);
    expect(errorsOf(`---javascript\n{ name: process.exit(9) }\n---\n${BODY}`)).toEqual([
      "/virtual/task.md:1:1: error: front matter language `javascript` is not allowed; SAM front matter is YAML only (remove `javascript` after the opening `---`)",
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("reports all problems at once, across front matter and body", () => {
    const errors = errorsOf(`---\nnetwork: maybe\ngpu: two\n---\n# Task\n\n## To-do\n\n## Expectation\n`);
    expect(errors).toEqual([
      "/virtual/task.md:2:10: error: `network`: expected `true`, `false` or a list of hosts, got the text `maybe`; for example `network: [data.example.org]`",
      "/virtual/task.md:3:6: error: `gpu`: expected a GPU count (0 or more), got the text `two`; for example `gpu: 1`",
      "/virtual/task.md:7:1: error: empty To-do in `Task`; say what the agent should do",
      "/virtual/task.md:9:1: error: empty Expectation in `Task`; list what must be true when the task is done (one item per criterion, optionally with a `check` block)",
    ]);
  });
});
