// a38d-compare-hidden-forms (open): compare stages that read the agent's file, and so can never
// pass, still validate.
//
// The promise (docs/sam-format.md "Compare stages": "The lint sees every simple command wherever it
// hides: ... in a `case` word, and in a function's body"; issue 38 point 1: a compare stage naming a
// relative path that is neither a check asset nor under outputs/ "is an error whether or not the
// file exists yet").
// What happened: `case x in x) cmp checks/ref.txt answer.txt;; esac` on one line is refused, but the
// same `case` written over lines (how every grader writes it) validates OK: the pattern `x` on its
// own line is read as a command, a program that may have written any file, so nothing after it is
// judged (the `(x)` pattern form likewise). `eval '...'`, `sh -c '...'`, `bash -c "..."` and a here-document
// piped into `sh` hide the same read in quoted text (documented as "quoted text with spaces", but
// the allowlist in the same doc parses `sh -c` and `eval` scripts); a here-string into `xargs`
// (`xargs cmp checks/ref.txt <<< answer.txt`) and a `for` list handed to a check asset's program
// (`for f in answer.txt; do python3 checks/grade.py "$f"; done`, where the same
// `python3 checks/grade.py answer.txt` is refused) validate too. Each stage fails every trial.
// Suggested fix: runner/sam/shell-lint.ts: a `case` pattern list (`pat)` / `(pat)` up to `)`) is no
// command word, the body after it is a command; read the script argument of `eval`, `sh -c`,
// `bash -c` (and a here-document given to a shell as its input) as commands with lintCommands; a
// `<<<` word given to `xargs` is its argument; a loop variable given to any program after its first
// operand (a check asset) reads the list, as the flat form does.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkSam } from "../../runner/sam/gate.ts";

const STAGES = [
  "case x in\n  x) cmp checks/ref.txt answer.txt ;;\nesac",
  "case x in (x) cmp checks/ref.txt answer.txt;; esac",
  "eval 'cmp checks/ref.txt answer.txt'",
  "sh -c 'cmp checks/ref.txt answer.txt'",
  'bash -c "cmp checks/ref.txt answer.txt"',
  "cat <<EOF | sh\ncmp checks/ref.txt answer.txt\nEOF",
  "xargs cmp checks/ref.txt <<< answer.txt",
  'for f in answer.txt; do\n  python3 checks/grade.py "$f"\ndone',
];

function validate(stage: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "scifi-a38d-compare-"));
  mkdirSync(join(dir, "checks"));
  writeFileSync(join(dir, "checks", "ref.txt"), "42\n");
  writeFileSync(join(dir, "checks", "grade.py"), "import sys\nprint(open(sys.argv[1]).read())\n");
  const body = stage
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n");
  const sam = `---\nname: t\ncheck_assets: [checks/ref.txt, checks/grade.py]\n---\n# T\n\n## To-do\nWrite 42 to answer.txt.\n\n## Expectation\n- answer.txt holds 42.\n  \`\`\`check outputs=r.txt\n  echo 1 > r.txt\n  \`\`\`\n  \`\`\`compare\n${body}\n  \`\`\`\n`;
  writeFileSync(join(dir, "task.md"), sam);
  return checkSam(join(dir, "task.md"))
    .diagnostics.filter((d) => d.severity === "error")
    .map((d) => d.message);
}

describe("a38d: compare stages that read the agent's answer.txt in forms the lint does not see", () => {
  it.each(STAGES)("`%s` is refused, as `cmp checks/ref.txt answer.txt` is", (stage) => {
    expect(validate("cmp checks/ref.txt answer.txt").join("\n")).toMatch(/reads `answer\.txt`/);
    expect(validate(stage).join("\n")).toMatch(/answer\.txt/);
  });
});
