// a38c-compare-reads-hidden-forms: compare stages that read the agent's file, and so can never pass,
// still validate.
//
// The promise (issue 38 point 1: "A compare stage that names a relative path which is neither a
// check asset nor under outputs/ is an error whether or not the file exists yet"; docs/sam-format.md
// "Compare stages": "`/task/F` is F (`/task` is the stage's own folder)"; docs/loop.md: the shell
// parser finds every simple command "wherever it hides (`;`, `&&`, pipes, subshells, functions,
// `$(...)`, backticks ...)" for the allowlist).
// What happened: the lint (runner/sam/compare-reads.ts) reads the stage's top-level commands only:
// a read inside a command substitution, a backtick, a function body, or a `for` list is not seen,
// and `/task/F` is F in that spelling and `/task/./F`, but `//task/F` and `/task/../task/F` (the
// same path) pass as "absolute". `test "$(cat answer.txt)" = 42` is the most common way to
// compare a value in a shell; each stage below validates OK and fails every trial ("No such file").
// (Held: `cat answer.txt`, `< answer.txt cmd`, `exec 3<`, `mapfile <`, `read <`, `find -name`,
// `cmp --`, `paste`, `cut`, `sort |`, `ln -s answer.txt a`, quoted `"answer.txt"`, `an''swer.txt`.)
// Suggested fix: walk the same parse the allowlist walks (substitutions, backticks, function
// bodies, subshells) and judge the words of a `for` list as read; normalise a `/task` path
// (posix.normalize, leading `//`) before the `/task/F is F` rule.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkSam } from "../../runner/sam/gate.ts";

const STAGES = [
  'test "$(cat answer.txt)" = 42',
  'x=$(cat answer.txt); test "$x" = 42',
  'test "`cat answer.txt`" = 42',
  'test "$(< answer.txt)" = 42',
  "case $(cat answer.txt) in 42) exit 0;; esac; exit 1",
  "same() { cmp checks/ref.txt answer.txt; }; same",
  'for f in answer.txt fit.json; do cmp "$f" checks/ref.txt; done',
  "cmp checks/ref.txt //task/answer.txt",
  "cmp checks/ref.txt /task/../task/answer.txt",
];

function validate(stage: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "scifi-a38c-compare-"));
  mkdirSync(join(dir, "checks"));
  writeFileSync(join(dir, "checks", "ref.txt"), "42\n");
  const sam = `---\nname: t\ncheck_assets: [checks/ref.txt]\n---\n# T\n\n## To-do\nWrite 42 to answer.txt.\n\n## Expectation\n- answer.txt holds 42.\n  \`\`\`check outputs=r.txt\n  echo 1 > r.txt\n  \`\`\`\n  \`\`\`compare\n  ${stage}\n  \`\`\`\n`;
  writeFileSync(join(dir, "task.md"), sam);
  return checkSam(join(dir, "task.md"))
    .diagnostics.filter((d) => d.severity === "error")
    .map((d) => d.message);
}

describe("a38c: compare stages that read the agent's answer.txt in other forms", () => {
  it.each(STAGES)("`%s` is refused, as `cmp checks/ref.txt answer.txt` is", (stage) => {
    expect(validate("cmp checks/ref.txt answer.txt").join("\n")).toMatch(/reads `answer\.txt`/);
    expect(validate(stage).join("\n")).toMatch(/answer\.txt/);
  });
});
