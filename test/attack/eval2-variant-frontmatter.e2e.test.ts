// Attack on the by-description-level numbers of `scifi eval` (attacker session eval2, a hostile task
// folder from elsewhere; written from docs/eval.md "Variants" and evals/README.md).
// Promise (docs/eval.md): "Variants may differ in their Context and To-do, never in what is judged
// ... the first difference is an error naming both files"; evals/README.md: the levels have "the
// same front matter and Expectation, checks included, and a different To-do and Context".
// What the task folder did: `task.st.md` keeps the checks of `task.nl.md` but gives itself
// `iterations: 4` (nl: 1), `budget_usd: 9`, `walltime: 2h`, `network: true`, and an Expectation
// whose item says something else plus a second item that only the review judges.
// What happened (before the fix): the suite loaded and `scifi eval` ran it (seen: v.nl 1
// iteration, v.st 2 iterations, the second variant judged on two Expectation items), so the
// byVariant pass rates compared attempts, budgets, network and review items, not description
// levels. Fixed: runner/eval/suite.ts compares every front matter key and every Expectation item
// (text up to whitespace, ids in tree order, sub-SAMs included) of each variant with the first's,
// besides the checks and assets, and refuses the suite naming both files and what differs.
// Lives in test/attack/ with the .e2e suffix like its siblings; it needs no engine (parsing only).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadSuite, SuiteError } from "../../runner/eval/suite.ts";

const BODY = (items: string) => `# Write out.txt

## To-do
Write a file called out.txt.

## Expectation
${items}`;

const CHECK = "  ```check timeout=30s\n  test -f out.txt\n  ```\n";
const NL = `---\nname: eval-echo\niterations: 1\nbudget_usd: 1\n---\n${BODY(`- \`out.txt\` exists.\n${CHECK}`)}`;

async function problems(frontMatter: string, items: string): Promise<string[]> {
  const root = mkdtempSync(join(tmpdir(), "eval2-variants-"));
  const dir = join(root, "t", "v");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "task.nl.md"), NL);
  writeFileSync(join(dir, "task.st.md"), `---\nname: eval-echo\n${frontMatter}---\n${BODY(items)}`);
  writeFileSync(join(root, "s.yaml"), "tasks: [t/v]\nmodels: [scripted:x.yaml]\n");
  writeFileSync(join(root, "x.yaml"), "prescan: []\n");
  try {
    await loadSuite(join(root, "s.yaml"));
  } catch (error) {
    if (error instanceof SuiteError) return error.problems;
    throw error;
  }
  return [];
}

describe("scifi eval suites: variants that do not judge alike", () => {
  it("a level that grants itself more iterations, budget, wall time and network is refused", async () => {
    const found = await problems(
      "iterations: 4\nbudget_usd: 9\nwalltime: 2h\nnetwork: true\n",
      `- \`out.txt\` exists.\n${CHECK}`,
    );
    // Before the fix: [] (the suite loaded and the eval ran both levels with different limits).
    expect(found.join("\n")).toMatch(/task\.st\.md.*task\.nl\.md/s);
    expect(found).toEqual([
      expect.stringMatching(
        /task\.st\.md: variant 'st' must have the same front matter as 'nl' \(task\.nl\.md\): front matter 'walltime' differs/,
      ),
    ]);
  });

  it("a level whose Expectation differs (another text, an item only the review judges) is refused", async () => {
    const found = await problems(
      "iterations: 1\nbudget_usd: 1\n",
      `- \`out.txt\` exists, and is a proof of the Riemann hypothesis.\n${CHECK}- The agent also wrote a poem.\n`,
    );
    // Before the fix: [] (the st trials were reviewed on two items, nl on one).
    expect(found.join("\n")).toMatch(/task\.st\.md.*task\.nl\.md/s);
    expect(found).toEqual([
      expect.stringMatching(
        /task\.st\.md: variant 'st' must have the same Expectation as 'nl' \(task\.nl\.md\): Expectation item root\/e1 differs/,
      ),
    ]);
  });
});
