// Attacks on `scifi eval` that held (attacker session eval4; from docs/eval.md "Variants" and
// "Trials and the eval folder"). Parsing only: no engine needed.
// Promise ("Variants"): "Variants may differ in their Context and To-do only, never in what is
// judged or what a run is granted", with "the same checks: command, stage, timeout, ..." and "the
// same front matter, every key as parsed", and "the same Expectation".
// Done (a hostile task folder from elsewhere; task.st.md against task.nl.md, whose one item checks
// `test -f out.txt`):
// 1. a fenced ```check block inside the To-do (a check that only the st level would run);
// 2. a `### Expectation` heading inside the To-do with an extra item (one only the review judges);
// 3. a front matter key spelled with a Cyrillic look-alike (`іterations: 9`) beside `iterations: 1`;
// 4. the same check with two spaces inside its command (`test  -f out.txt`): the Expectation text is
//    compared with whitespace squeezed, a check command must not be (`grep 'a  b'` is not
//    `grep 'a b'`);
// 5. a level whose To-do adds a `## Sub-SAM`-like numbered section after the Expectation.
// Happened: every one refused, with the file and line (1: "a `check` block in the To-do section
// would never run", 2: "section heading `Expectation` is inside the To-do section", 3: "unknown
// metadata key `іterations`", 4: "must have the same checks", 5: "unknown section").
// Also: a task folder named like a trial's own files (`result.json`, `attempts.jsonl`) cannot be
// a task: names must match [A-Za-z0-9][A-Za-z0-9_-]* (no dot), so it never shadows them.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSuite, SuiteError } from "../../runner/eval/suite.ts";

const FM = "---\nname: e\niterations: 1\nbudget_usd: 1\n---\n";
const ITEM = (cmd = "test -f out.txt") =>
  `- \`out.txt\` exists.\n  \`\`\`check timeout=30s\n  ${cmd}\n  \`\`\`\n`;
const NL = `${FM}# Write out.txt\n\n## To-do\nWrite out.txt.\n\n## Expectation\n${ITEM()}`;

async function problems(st: string, task = "v"): Promise<string[]> {
  const root = mkdtempSync(join(tmpdir(), "eval4-held-"));
  const dir = join(root, "t", task);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "task.nl.md"), NL);
  writeFileSync(join(dir, "task.st.md"), st);
  writeFileSync(join(root, "s.yaml"), `tasks: [t/${task}]\nmodels: [scripted:x.yaml]\n`);
  writeFileSync(join(root, "x.yaml"), "prescan: []\n");
  try {
    await loadSuite(join(root, "s.yaml"));
  } catch (error) {
    if (error instanceof SuiteError) return error.problems;
    throw error;
  }
  return [];
}

describe("scifi eval: variants that smuggle in what is judged (held)", () => {
  it("a check block inside the To-do is refused", async () => {
    const found = await problems(
      `${FM}# Write out.txt\n\n## To-do\nWrite out.txt.\n\n\`\`\`check timeout=30s\ntrue\n\`\`\`\n\n## Expectation\n${ITEM()}`,
    );
    expect(found.join("\n")).toMatch(/task\.st\.md:\d+:\d+: a `check` block in the To-do section/);
  });

  it("an Expectation heading inside the To-do is refused", async () => {
    const found = await problems(
      `${FM}# Write out.txt\n\n## To-do\nWrite out.txt.\n\n### Expectation\n- also a poem\n\n## Expectation\n${ITEM()}`,
    );
    expect(found.join("\n")).toMatch(
      /task\.st\.md:\d+:\d+: section heading `Expectation` is inside the To-do/,
    );
  });

  it("a look-alike front matter key is refused", async () => {
    const found = await problems(
      `---\nname: e\niterations: 1\nbudget_usd: 1\nіterations: 9\n---\n${NL.slice(FM.length)}`,
    );
    expect(found.join("\n")).toMatch(/unknown metadata key `іterations`/);
  });

  it("whitespace inside a check command is not normalised away", async () => {
    const found = await problems(
      `${FM}# Write out.txt\n\n## To-do\nWrite out.txt.\n\n## Expectation\n${ITEM("test  -f out.txt")}`,
    );
    expect(found.join("\n")).toMatch(/variant 'st' must have the same checks as 'nl'/);
  });

  it("an extra top-level section after the Expectation is refused", async () => {
    const found = await problems(`${NL}\n## 1. Extra\n\n### Expectation\n- y\n`);
    expect(found.join("\n")).toMatch(/unknown section `1\. Extra`/);
  });

  it("a task folder named like a trial's file (result.json) is not a task", async () => {
    const found = await problems(NL, "result.json");
    expect(found.join("\n")).toMatch(/the task folder's name 'result\.json' must match/);
  });
});
