// A37-3 (attacker on issue 37, output formats): docs/loop.md refuses a NumPy `.npy` "of objects",
// found by "'descr' with O in the .npy header". The pattern (/'descr'\s*:\s*[^,}]*O/) stops at the
// first comma, so a structured dtype whose object field is not the first one
// (`[('v', '<f8'), ('o', '|O')]`) passes. Its data is a pickle; an object in it that reduces to
// eval("open('/task/checks/expected' + '.txt').read()") becomes the hidden reference when a grader
// loads it with np.load(..., allow_pickle=True) (the name is split, so the hidden-name search misses
// it). Broke when found (the guard passed it); fixed since, so this passes: the guard returns undefined. Fix: refuse any 'O' in the whole descr (or any
// descr that is a list), or unpickle nothing: refuse every .npy whose dtype has objects anywhere.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { outputFormatProblem } from "../../runner/run/output-formats.ts";

const MAKE = [
  "import numpy as np",
  "class R:",
  "    def __reduce__(self):",
  "        return (eval, (\"open('/task/checks/expected' + '.txt').read()\",))",
  "a = np.zeros(1, dtype=[('v', '<f8'), ('o', 'O')])",
  "a[0]['o'] = R()",
  "np.save('/task/out/result.npy', a)",
].join("\n");
const LOAD = "import numpy as np; print(np.load('/task/out/result.npy', allow_pickle=True)[0]['o'], end='')";

function docker(task: string, script: string): string {
  return execFileSync(
    "docker",
    ["run", "--rm", "--network=none", "-v", `${task}:/task`, "scifi-sci:local", "python3", "-c", script],
    { encoding: "utf8" },
  );
}

describe("A37-3: a .npy with an object field that is not the first field of its dtype", () => {
  const task = mkdtempSync(join(tmpdir(), "a37-npy-"));
  mkdirSync(join(task, "checks"));
  mkdirSync(join(task, "out"), { mode: 0o777 });
  writeFileSync(join(task, "checks", "expected.txt"), "42.125\n");

  it("is made by numpy and read back by a grader as the hidden reference (real Docker)", () => {
    docker(task, MAKE);
    expect(docker(task, LOAD)).toBe("42.125\n");
  }, 60_000);

  it("is refused when copied out", () => {
    const problem = outputFormatProblem("out/result.npy", readFileSync(join(task, "out", "result.npy")), {
      hiddenNames: ["checks/expected.txt", "expected.txt"],
    });
    expect(problem).toContain("declared output out/result.npy is refused");
  });
});
