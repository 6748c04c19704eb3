// a38c-compare-reads-hidden-forms (fixed): compare stages that read the agent's file, and so can
// never pass, still validated.
//
// The promise (issue 38 point 1: "A compare stage that names a relative path which is neither a
// check asset nor under outputs/ is an error whether or not the file exists yet"; docs/sam-format.md
// "Compare stages": "`/task/F` is F (`/task` is the stage's own folder)"; docs/loop.md: the shell
// parser finds every simple command "wherever it hides (`;`, `&&`, pipes, subshells, functions,
// `$(...)`, backticks ...)" for the allowlist).
// What happened (before the fix): the lint (runner/sam/compare-reads.ts) read the stage's top-level
// commands only: a read inside a command substitution, a backtick, a function body, or a `for` list
// is not seen, and `/task/F` is F in that spelling and `/task/./F`, but `//task/F` and
// `/task/../task/F` (the same path) pass as "absolute". `test "$(cat answer.txt)" = 42` is the most
// common way to compare a value in a shell; each stage below validates OK and fails every trial
// ("No such file").
// (Held: `cat answer.txt`, `< answer.txt cmd`, `exec 3<`, `mapfile <`, `read <`, `find -name`,
// `cmp --`, `paste`, `cut`, `sort |`, `ln -s answer.txt a`, quoted `"answer.txt"`, `an''swer.txt`.)
// Fixed: the lint's parse (runner/sam/shell-lint.ts) reads the commands inside substitutions and
// backticks (before the command holding them), function bodies where they are defined, and a `for`
// list as read where the body reads its variable as a file; a `/task` path is normalised first.
// The forms a valid stage uses stay valid (the second table).
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

const VALID = [
  'test "$(cat outputs/r.txt)" = 42',
  'x=$(cat checks/ref.txt); test "$(cat outputs/r.txt)" = "$x"',
  'test "`cat outputs/r.txt`" = "$(< checks/ref.txt)"',
  'sort checks/ref.txt > got.txt; test "$(cat got.txt)" = 42',
  "n=$((1 + 2)); cmp checks/ref.txt outputs/r.txt",
  "same() { cmp checks/ref.txt outputs/r.txt; }; same",
  "function same { cmp checks/ref.txt outputs/r.txt; }; same",
  'show() { cat "$1"; }; show outputs/r.txt',
  "for f in r.txt; do cmp outputs/$f checks/ref.txt; done",
  'for f in a.txt b.txt; do test -n "$f"; done; cmp outputs/r.txt checks/ref.txt',
  'for f in outputs/r.txt checks/ref.txt; do cat "$f"; done',
  "cmp checks/ref.txt /task/outputs/r.txt",
  "cmp //task/checks/ref.txt /task/./outputs/r.txt",
  "case $(cat outputs/r.txt) in 42) exit 0;; esac; exit 1",
];

describe("a38c: the same forms reading what the compare stage's folder holds", () => {
  it.each(VALID)("`%s` stays valid", (stage) => {
    expect(validate(stage)).toEqual([]);
  });

  it("a `for` list naming an output no run stage declares is refused as that", () => {
    expect(validate('for f in outputs/nope.txt; do cmp "$f" checks/ref.txt; done').join("\n")).toMatch(
      /no run stage declares `nope\.txt`/,
    );
  });
});
