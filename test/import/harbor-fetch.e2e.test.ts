// Tests whose installs were mapped to the image's tools really run there (real Docker sandbox, the
// runner's checks, scripted models over HTTP): the Harbor task whose test.sh installs uv with
// curl | sh and runs `uvx pytest`, and the Terminal-Bench task.yaml task whose run-tests.sh does the
// same with `uv pip install` + `uv run pytest`, are judged by the image's pytest in the compare
// stage, without network: each passes with its reference solution, and a wrong answer or none fails.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";
import { ensurePytestImage, PYTEST_IMAGE } from "./harbor-pytest-image.ts";
import { runImported } from "./harbor-run.ts";

const HARBOR = join(REPO, "test", "fixtures", "harbor", "uv-pytest");
const TERMINAL_BENCH = join(REPO, "test", "fixtures", "terminal-bench", "line-sum");

describe.skipIf(!hasEngine("docker"))(
  "imported tasks whose tests installed pytest run the image's pytest",
  { timeout: 900_000 },
  () => {
    beforeAll(() => ensurePytestImage(), 1_800_000);

    it("the Harbor task (curl | sh + uvx pytest): passes with solve.sh, fails with a wrong sum and with nothing", async () => {
      const solve = readFileSync(join(HARBOR, "solution", "solve.sh"), "utf8");
      const solved = await runImported(HARBOR, solve, { image: PYTEST_IMAGE });
      expect(solved.result.outcome.status).toBe("passed");
      expect(solved.checks).toEqual([
        ["root/check-1", true],
        ["root/check-2", true],
      ]);
      expect(solved.compare).toMatch(/2 passed/);
      expect(solved.compare).toContain("every metric reached 1.0");

      const wrong = await runImported(HARBOR, "echo 41 > sum.txt", { image: PYTEST_IMAGE });
      expect(wrong.result.outcome.status).toBe("failed");
      expect(wrong.checks).toEqual([
        ["root/check-1", true],
        ["root/check-2", false],
      ]);
      expect(wrong.compare).toMatch(
        /FAILED [^\n]*test_sum_is_right[\s\S]*1 failed, 1 passed[\s\S]*below 1\.0: reward/,
      );

      const nothing = await runImported(HARBOR, undefined, { image: PYTEST_IMAGE });
      expect(nothing.result.outcome.status).toBe("failed");
      expect(nothing.checks).toEqual([
        ["root/check-1", false],
        ["root/check-2", false],
      ]);
    });

    it("the Terminal-Bench task.yaml task (uv pip install + uv run pytest): passes with solution.sh, fails with a wrong sum", async () => {
      const solve = readFileSync(join(TERMINAL_BENCH, "solution.sh"), "utf8");
      const solved = await runImported(TERMINAL_BENCH, solve, { image: PYTEST_IMAGE });
      expect(solved.result.outcome.status).toBe("passed");
      expect(solved.compare).toMatch(/2 passed/);
      const wrong = await runImported(TERMINAL_BENCH, "echo 39 > sum.txt", { image: PYTEST_IMAGE });
      expect(wrong.result.outcome.status).toBe("failed");
      expect(wrong.checks).toEqual([
        ["root/check-1", true],
        ["root/check-2", false],
      ]);
      expect(wrong.compare).toMatch(/1 failed, 1 passed/);
    });
  },
);
