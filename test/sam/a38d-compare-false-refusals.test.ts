// a38d-compare-false-refusals (fixed): valid compare stages, as graders write them, validate.
//
// The promise (docs/sam-format.md "Compare stages": the lint refuses a path "that is neither a check
// asset nor under outputs/" and "running an output"; issue 38 point 1 makes every entry point refuse
// what `scifi validate` reports, so a false error stops `scifi run`, evals, the daemon and submit).
// What happened (before the fix): each stage below reads only outputs/ and check assets, runs nothing the agent made,
// and passes when run by hand in the compare folder, but `scifi validate` refuses it:
// - `files=(outputs/r.txt checks/ref.txt); cmp "${files[@]}"`: a bash array assignment's `(` ends
//   the command, so `outputs/r.txt` is read as a program: "runs `outputs/r.txt`, a file the agent's
//   work made" (and `files=(answer.txt)` is refused with that wrong message).
// - `python3 - outputs/r.txt <<'EOF' ... EOF`: `-` makes python3 read its program from the
//   here-document; outputs/r.txt is sys.argv[1], data, yet "hands `outputs/r.txt` to `python3`, which
//   runs it as code".
// - `xargs -a outputs/r.txt echo`: `-a FILE` is xargs' input file, read as the program it runs.
// - `flock lock.txt python3 checks/grade.py outputs/r.txt`: flock's first operand is its lock file
//   (flock creates it), read as the program: "runs `lock.txt`".
// Fixed in runner/sam/shell-lint.ts: `name=(...)` is an array assignment (values, no command);
// `wrappedProgram` gives each wrapper its options that take a value and its leading operands
// (`xargs -a F`, `flock F`, `timeout 10`), and flock's lock file counts as written;
// stage-lint.ts: an interpreter's `-` operand means its program is its input, later words are data.
import { describe, expect, it } from "vitest";
import { validateCompareStage as validate } from "./compare-stage.ts";

const VALID = [
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell array, not a template
  'files=(outputs/r.txt checks/ref.txt); cmp "${files[@]}"',
  "python3 - outputs/r.txt <<'EOF'\nimport sys\nprint(open(sys.argv[1]).read())\nEOF",
  "xargs -a outputs/r.txt echo > echoed.txt; cat echoed.txt",
  "flock lock.txt python3 checks/grade.py outputs/r.txt",
  // Beyond the attacker's list: the fixed readers must not refuse what they now read.
  "bash -c 'cmp outputs/r.txt checks/ref.txt'",
  "case x in\n  x) cmp outputs/r.txt checks/ref.txt ;;\n  (y|z) exit 1 ;;\nesac",
  "timeout -s KILL 10 python3 checks/grade.py outputs/r.txt",
  "xargs -n 1 cmp checks/ref.txt <<< outputs/r.txt",
  'for f in outputs/r.txt; do python3 checks/grade.py "$f"; done',
];

describe("a38d: valid compare stages that read only outputs/ and check assets", () => {
  it.each(VALID)("`%s` validates", (stage) => {
    expect(validate(stage)).toEqual([]);
  });
});
