import { describe, expect, it } from "vitest";
import { levelProblems } from "./level-problems.ts";

const FM = "---\nname: e\niterations: 1\nbudget_usd: 1\n---\n";
const ITEM = (cmd = "test -f out.txt") =>
  `- \`out.txt\` exists.\n  \`\`\`check timeout=30s\n  ${cmd}\n  \`\`\`\n`;
const NL = `${FM}# Write out.txt\n\n## To-do\nWrite out.txt.\n\n## Expectation\n${ITEM()}`;

function problems(st: string, task = "v"): Promise<string[]> {
  return levelProblems(NL, st, task);
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
