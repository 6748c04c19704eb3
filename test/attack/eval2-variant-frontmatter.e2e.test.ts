import { describe, expect, it } from "vitest";
import { levelProblems } from "./level-problems.ts";

const BODY = (items: string) => `# Write out.txt

## To-do
Write a file called out.txt.

## Expectation
${items}`;

const CHECK = "  ```check timeout=30s\n  test -f out.txt\n  ```\n";
const NL = `---\nname: eval-echo\niterations: 1\nbudget_usd: 1\n---\n${BODY(`- \`out.txt\` exists.\n${CHECK}`)}`;

function problems(frontMatter: string, items: string): Promise<string[]> {
  return levelProblems(NL, `---\nname: eval-echo\n${frontMatter}---\n${BODY(items)}`);
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
