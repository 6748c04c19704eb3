// a38d-compare-hidden-forms (fixed): compare stages that read the agent's file in forms the lint
// used to miss are refused, as the flat `cmp checks/ref.txt answer.txt` is.
// pass, still validate.
//
// The promise (docs/sam-format.md "Compare stages": "The lint sees every simple command wherever it
// hides: ... in a `case` word, and in a function's body"; issue 38 point 1: a compare stage naming a
// relative path that is neither a check asset nor under outputs/ "is an error whether or not the
// file exists yet").
// What happened (before the fix): `case x in x) cmp checks/ref.txt answer.txt;; esac` on one line is refused, but the
// same `case` written over lines (how every grader writes it) validates OK: the pattern `x` on its
// own line is read as a command, a program that may have written any file, so nothing after it is
// judged (the `(x)` pattern form likewise). `eval '...'`, `sh -c '...'`, `bash -c "..."` and a here-document
// piped into `sh` hide the same read in quoted text (documented as "quoted text with spaces", but
// the allowlist in the same doc parses `sh -c` and `eval` scripts); a here-string into `xargs`
// (`xargs cmp checks/ref.txt <<< answer.txt`) and a `for` list handed to a check asset's program
// (`for f in answer.txt; do python3 checks/grade.py "$f"; done`, where the same
// `python3 checks/grade.py answer.txt` is refused) validate too. Each stage fails every trial.
// Fixed in runner/sam/shell-lint.ts: a `case` pattern list (`pat)` / `(pat)` up to `)`) is no
// command, its body is; the script of `eval`, `sh -c`/`bash -c` and a here-document a shell reads
// (`sh <<EOF`, `cat <<EOF | sh`) are read as commands; compare-reads.ts: a `<<<` word given to
// `xargs` is its program's operand; a loop variable handed to a program that is no reader is
// judged as that program's operand (`python3 checks/grade.py answer.txt`).
import { describe, expect, it } from "vitest";
import { validateCompareStage as validate } from "./compare-stage.ts";

const STAGES = [
  "case x in\n  x) cmp checks/ref.txt answer.txt ;;\nesac",
  "case x in (x) cmp checks/ref.txt answer.txt;; esac",
  "eval 'cmp checks/ref.txt answer.txt'",
  "sh -c 'cmp checks/ref.txt answer.txt'",
  'bash -c "cmp checks/ref.txt answer.txt"',
  "cat <<EOF | sh\ncmp checks/ref.txt answer.txt\nEOF",
  "xargs cmp checks/ref.txt <<< answer.txt",
  'for f in answer.txt; do\n  python3 checks/grade.py "$f"\ndone',
  // Beyond the attacker's list: the same reads in neighbouring spellings.
  "sh <<EOF\ncmp checks/ref.txt answer.txt\nEOF",
  "cat <<EOF |\ncmp checks/ref.txt answer.txt\nEOF\nsh",
  "case $(cat outputs/r.txt) in\n  42) exit 0 ;;\n  *) cmp checks/ref.txt answer.txt ;;\nesac",
  "xargs -a answer.txt cmp checks/ref.txt",
  "eval \"sh -c 'cmp checks/ref.txt answer.txt'\"",
];

describe("a38d: compare stages that read the agent's answer.txt in forms the lint does not see", () => {
  it.each(STAGES)("`%s` is refused, as `cmp checks/ref.txt answer.txt` is", (stage) => {
    expect(validate("cmp checks/ref.txt answer.txt").join("\n")).toMatch(/reads `answer\.txt`/);
    expect(validate(stage).join("\n")).toMatch(/answer\.txt/);
  });
});

describe("a38d: an output run through a script handed to a shell", () => {
  it.each(["sh -c 'outputs/r.txt'", "eval 'outputs/r.txt --check'", "sh <<EOF\noutputs/r.txt\nEOF"])(
    "`%s` is refused as running an output",
    (stage) => {
      expect(validate(stage).join("\n")).toMatch(/runs `outputs\/r\.txt`|hands `outputs\/r\.txt`/);
    },
  );
});
