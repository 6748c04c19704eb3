// Attack on issue 38's compare-stage path rule (runner/sam/compare-reads.ts), found by attacker a38;
// fixed (the lint reads the SAM's text alone, a path counts as written only after the command that
// writes it, `name=F` operands and `/task/F` are read, and outputs count only when a run stage before
// the compare stage declares them). What each case showed:
// 1. A legitimate compare stage is refused once the task folder holds a file of the name the stage
//    itself makes. docs/sam-format.md says "a file a program of the stage may have written (named
//    again after it ran ...)" is not counted as read, and `python3 checks/gen.py expected.txt && cmp
//    expected.txt outputs/result.txt` is accepted in an empty folder (test/sam/compare-reads.test.ts);
//    but judgePath refuses any path the task folder has before the writer logic is consulted. The
//    agent controls the task folder: by leaving an `expected.txt` there it makes the author's next
//    `scifi run` (and `scifi validate`, an eval, the daemon) refuse a SAM that was valid.
// 2. Stages that validate but can never pass: they read a task-folder file the compare folder never
//    holds. `sort -o F F` reads F before writing it (the lint counts F as produced, so never read);
//    dd's `if=` operand is a read the lint does not see (it is not an option word and not excluded by
//    the docs); `/task/answer.txt` names the compare folder itself (`/task` is documented as the
//    runner's folder), so the lint could judge it although absolute paths are otherwise skipped.
// 3. A stage that reads `outputs/X` where X is declared only by a run stage AFTER it (later in the same
//    item, or in a later item) validates: the lint takes "every run stage's declared outputs,
//    anywhere in the SAM", but docs/loop.md says the compare folder holds "the declared outputs of
//    the run stages that ran before it in this check phase" (and the lint's own message asks for "a
//    run stage before this one"). outputs/X is never there: the stage can never pass.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSamString } from "../../runner/sam/parse.ts";

const ASSETS = "check_assets: [checks/grade.py, checks/gen.py]\nhidden_assets: [checks/ref.txt]\n";
const RUN = "- Ok.\n  ```check outputs=result.txt\n  python3 solve.py > result.txt\n  ```\n";

/** The errors `scifi validate` gives the SAM with `command` as its compare stage, in a folder holding `extra`. */
function errors(command: string, extra: Record<string, string> = {}): string[] {
  const dir = mkdtempSync(join(tmpdir(), "scifi-a38-compare-"));
  mkdirSync(join(dir, "checks"));
  for (const rel of ["checks/grade.py", "checks/gen.py", "checks/ref.txt"]) writeFileSync(join(dir, rel), "");
  for (const [rel, text] of Object.entries(extra)) writeFileSync(join(dir, rel), text);
  const body = command
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
  const text = `---\nname: reads\n${ASSETS}---\n# T\n\n## To-do\nDo.\n\n## Expectation\n${RUN}  \`\`\`compare\n${body}\n  \`\`\`\n`;
  return parseSamString(text, join(dir, "task.md"))
    .diagnostics.filter((d) => d.severity === "error")
    .map((d) => d.message);
}

describe("a38: the compare-stage path rule", () => {
  it("accepts a stage that makes its own file, whatever file of that name the agent left", () => {
    const command = "python3 checks/gen.py expected.txt && cmp expected.txt outputs/result.txt";
    expect(errors(command)).toEqual([]);
    // The agent drops expected.txt into the task folder: the same SAM is now refused.
    expect(errors(command, { "expected.txt": "planted by the agent" })).toEqual([]);
  });

  it.each([
    ["sort -o answer.txt answer.txt && cmp answer.txt checks/ref.txt", "answer.txt"],
    ["dd if=answer.txt of=/tmp/got.txt && cmp /tmp/got.txt checks/ref.txt", "answer.txt"],
    ["cmp /task/answer.txt checks/ref.txt", "answer.txt"],
  ])("refuses `%s`, which reads the task folder's %s and can never pass", (command, read) => {
    expect(errors(command).join("\n")).toContain(`reads \``);
    expect(errors(command).join("\n")).toContain(read);
  });

  it.each([
    [
      "later in the same item",
      "- Ok.\n  ```compare\n  cmp outputs/late.txt checks/ref.txt\n  ```\n  ```check outputs=late.txt\n  python3 solve.py > late.txt\n  ```\n",
    ],
    [
      "in a later item",
      "- First.\n  ```compare\n  cmp outputs/late.txt checks/ref.txt\n  ```\n- Second.\n  ```check outputs=late.txt\n  python3 solve.py > late.txt\n  ```\n",
    ],
  ])("refuses a read of an output declared only by a run stage %s", (_where, expectation) => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-a38-compare-"));
    mkdirSync(join(dir, "checks"));
    writeFileSync(join(dir, "checks/ref.txt"), "");
    const text = `---\nname: reads\nhidden_assets: [checks/ref.txt]\n---\n# T\n\n## To-do\nDo.\n\n## Expectation\n${expectation}`;
    const found = parseSamString(text, join(dir, "task.md")).diagnostics.filter(
      (d) => d.severity === "error",
    );
    expect(found.map((d) => d.message).join("\n")).toContain("outputs/late.txt");
    expect(found.map((d) => d.message).join("\n")).toContain("only a run stage after it declares `late.txt`");
  });

  it.each([
    "bash /task/outputs/result.txt",
    "/task/outputs/result.txt",
    "python3 checks/grade.py < /task/outputs/result.txt && cat /task/outputs/result.txt | sh",
  ])("refuses `%s`: /task/outputs is outputs/, run as code", (command) => {
    expect(errors(command).join("\n")).toMatch(/a compare stage (runs|hands|feeds)/);
  });
});
