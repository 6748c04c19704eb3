// `scifi validate` warns where a run stage runs the agent's code and then a judging check asset in
// one script (the judge's exit status is then the agent's to forge), at the check's file:line:col,
// pointing to the compare stage; and says nothing where the stages are apart.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { validatePaths } from "../../runner/sam/validate.ts";

function validate(path: string): { outcome: string; out: string } {
  let out = "";
  const sink = { write: (text: string) => (out += text) };
  const outcome = validatePaths([path], { json: false, out: sink, err: sink });
  return { outcome, out };
}

/** A task folder with checks/judge.py, checks/ref.txt and checks/build_and_judge.sh as check assets. */
function task(blocks: string): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-judge-"));
  mkdirSync(join(dir, "checks"));
  writeFileSync(join(dir, "checks/judge.py"), "print('ok')\n");
  writeFileSync(join(dir, "checks/ref.txt"), "42\n");
  writeFileSync(
    join(dir, "checks/build_and_judge.sh"),
    "#!/bin/sh\nset -eu\nmake -s\n./prog > /tmp/out\ndiff -u checks/ref.txt /tmp/out\n",
  );
  writeFileSync(join(dir, "checks/build.sh"), "#!/bin/sh\nset -eu\nmake -s >&2\n./prog\n");
  const file = join(dir, "task.md");
  writeFileSync(
    file,
    `---\nname: judge-test\ncheck_assets: [checks/judge.py, checks/ref.txt, checks/build_and_judge.sh, checks/build.sh]\n---\n# T\n\n## To-do\nWrite prog.\n\n## Expectation\n- It works.\n${blocks}`,
  );
  return file;
}

const block = (lang: string, body: string) => `  \`\`\`${lang}\n  ${body}\n  \`\`\`\n`;

describe("a run stage that runs the agent's code and then a judge", () => {
  it.each([
    [
      "an interpreter, then a check-asset script",
      "python3 analysis.py && python3 checks/judge.py out.json",
      "python3 analysis.py",
      "python3 checks/judge.py out.json",
    ],
    [
      "a build, then a diff against a check asset",
      "make && ./prog > out.txt; diff -u checks/ref.txt out.txt",
      "make",
      "diff -u checks/ref.txt out.txt",
    ],
    [
      "a program of the task folder piped into the judge",
      "./prog | python3 /task/checks/judge.py",
      "./prog",
      "python3 /task/checks/judge.py",
    ],
    [
      "a wrapper and an assignment in front",
      "OMP_NUM_THREADS=1 timeout 60 gfortran -o p p.f90 && env X=1 ./checks/judge.py",
      "OMP_NUM_THREADS=1 timeout 60 gfortran -o p p.f90",
      "env X=1 ./checks/judge.py",
    ],
  ])("warns for %s, at the check's line, naming both and the compare stage", (_, script, agent, judge) => {
    const file = task(block("check timeout=1m", script));
    const { outcome, out } = validate(file);
    expect(outcome).toBe("valid");
    expect(out).toContain(
      `${file}:12:1: warning: this run stage runs the agent's code (\`${agent}\`) and then a check asset that judges (\`${judge}\`) in one script: the judge runs beside the agent's code`,
    );
    expect(out).toContain("then judge that in a ```compare``` stage that reads `outputs/...` as data");
  });

  it("looks one level into a check asset that is a shell script", () => {
    const file = task(block("check", "sh checks/build_and_judge.sh"));
    const { out } = validate(file);
    expect(out).toContain(
      "runs the agent's code (`make -s`) and then a check asset that judges (`diff -u checks/ref.txt /tmp/out`) in one script (in check asset `checks/build_and_judge.sh`)",
    );
  });

  it.each([
    [
      "a run stage that declares outputs and a compare stage that judges them",
      `${block("check outputs=out.json", "python3 analysis.py")}${block("compare", "python3 checks/judge.py outputs/out.json")}`,
    ],
    ["a judge before the agent's code", block("check", "python3 checks/judge.py ref && python3 analysis.py")],
    [
      "the agent's program reading a check asset as its input",
      block("check outputs=o.txt", "make && ./prog checks/ref.txt > o.txt"),
    ],
    [
      "a check-asset build script that only runs the work",
      block("check outputs=o.txt", "mkdir -p .c && sh checks/build.sh > o.txt"),
    ],
    [
      "a diff of two task files after a build (no check asset judges)",
      block("check", "make && diff a.txt b.txt"),
    ],
    ["an inline interpreter after a build", block("check", "make && python3 -c 'print(1)'")],
  ])("says nothing for %s", (_, blocks) => {
    const { outcome, out } = validate(task(blocks));
    expect(outcome).toBe("valid");
    expect(out).not.toContain("runs the agent's code");
  });

  it("the shipped examples have no such run stage", () => {
    const root = join(import.meta.dirname, "..", "..");
    const { outcome, out } = validate(join(root, "tasks", "examples"));
    expect(outcome).toBe("valid");
    expect(out).not.toContain("warning");
    expect(validate(join(root, "evals", "examples")).out).not.toContain("warning");
  });
});
