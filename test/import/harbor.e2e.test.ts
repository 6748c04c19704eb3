// Imported Harbor tasks run end to end (real Docker sandbox, the runner's checks, scripted models
// over HTTP): with the task's own solution/solve.sh run by the work agent they pass; without it
// they fail, even with a review that claims a pass; with a wrong answer (one metric of several
// wrong) the run stage passes and Harbor's hidden tests fail it, through the compare stage and its
// reward (reward.txt; every metric of reward.json).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../run/harness.ts";
import { runImported } from "./harbor-run.ts";

const FIXTURES = join(REPO, "test", "fixtures", "harbor");
/** A wrong answer per task: the table's first line only; two of the three statistics right. */
const WRONG: Record<string, { command: string; output: RegExp }> = {
  "word-count": { command: "echo '4 the' > counts.txt", output: /below 1\.0: reward/ },
  "csv-stats": {
    command: `echo '{"count": 5, "mean": 3.0, "max": 10.0}' > stats.json`,
    output: /count = 1\.0\nmean = 0\.0\nmax = 1\.0\n[\s\S]*below 1\.0: mean/,
  },
};

function run(name: string, answer: "solution" | "nothing" | "wrong") {
  const solve = readFileSync(join(FIXTURES, name, "solution", "solve.sh"), "utf8");
  return runImported(
    join(FIXTURES, name),
    answer === "solution" ? solve : answer === "wrong" ? WRONG[name]?.command : undefined,
  );
}

describe.skipIf(!hasEngine("docker"))(
  "imported Harbor tasks run in the sandbox",
  { timeout: 600_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it.each(["word-count", "csv-stats"])(
      "%s passes with its solution, fails without it and with a wrong answer",
      async (name) => {
        const solved = await run(name, "solution");
        expect(solved.result.outcome).toEqual({
          status: "passed",
          reason: "every check and review item passed",
        });
        expect(solved.checks).toEqual([
          ["root/check-1", true],
          ["root/check-2", true],
        ]);
        expect(solved.compare).toContain("every metric reached 1.0");
        const unsolved = await run(name, "nothing");
        expect(unsolved.result.outcome.status).toBe("failed");
        // The run stage already fails: the output the tests read does not exist.
        expect(unsolved.checks).toEqual([
          ["root/check-1", false],
          ["root/check-2", false],
        ]);
        const wrong = await run(name, "wrong");
        expect(wrong.result.outcome.status).toBe("failed");
        expect(wrong.checks).toEqual([
          ["root/check-1", true],
          ["root/check-2", false],
        ]);
        expect(wrong.compare).toMatch(WRONG[name]?.output ?? /never/);
      },
    );
  },
);
