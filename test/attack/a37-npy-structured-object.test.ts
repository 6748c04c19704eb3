import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { grader, referenceTask, refusal } from "./a37-grader.ts";

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

describe("A37-3: a .npy with an object field that is not the first field of its dtype", () => {
  const task = referenceTask("a37-npy-");

  it("is made by numpy and read back by a grader as the hidden reference (real Docker)", () => {
    grader(task, MAKE, true);
    expect(grader(task, LOAD, true)).toBe("42.125\n");
  }, 60_000);

  it("is refused when copied out", () => {
    const problem = refusal("out/result.npy", readFileSync(join(task, "out", "result.npy")));
    expect(problem).toContain("declared output out/result.npy is refused");
  });
});
