// `scifi import harbor` on the older Terminal-Bench layout (task.yaml, Dockerfile and
// docker-compose.yaml at the top, run-tests.sh, tests/, solution.sh): the same SAM as the Harbor
// layout of the same task (test/fixtures/harbor/uv-pytest), what is not mapped listed, and precise
// errors for a malformed task.yaml. The runs are in harbor-fetch.e2e.test.ts.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HarborImport, importHarbor } from "../../runner/import/harbor.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";
import { ensurePytestImage, PYTEST_IMAGE } from "./harbor-pytest-image.ts";

const TASK = join(REPO, "test", "fixtures", "terminal-bench", "line-sum");
const HARBOR = join(REPO, "test", "fixtures", "harbor", "uv-pytest");
const root = mkdtempSync(join(tmpdir(), "scifi-tbench-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function copy(): string {
  const dir = mkdtempSync(join(root, "task-"));
  cpSync(TASK, dir, { recursive: true });
  return dir;
}
const attempt = (dir: string) => () => importHarbor(dir, `${dir}-out`, { image: PYTEST_IMAGE });

describe.skipIf(!hasEngine("docker"))(
  "scifi import harbor: a Terminal-Bench task.yaml task",
  { timeout: 600_000 },
  () => {
    let tb: HarborImport;
    let harbor: HarborImport;
    beforeAll(() => {
      ensurePytestImage();
      tb = importHarbor(TASK, join(root, "tb"), { image: PYTEST_IMAGE });
      harbor = importHarbor(HARBOR, join(root, "harbor"), { image: PYTEST_IMAGE });
    }, 1_800_000);

    it("gives the same SAM as the Harbor layout of the same task, but for its name and its run-tests.sh", () => {
      expect(tb.layout).toBe("terminal-bench");
      expect(harbor.layout).toBe("harbor");
      const sam = (r: HarborImport, name: string) =>
        readFileSync(r.sam, "utf8")
          .replace(`name: ${name}`, "name: X")
          .replace(`# ${name}`, "# X")
          .replaceAll("checks/harbor/tests/run-tests.sh, ", "");
      expect(sam(tb, "line-sum")).toBe(sam(harbor, "uv-pytest"));
      expect(readFileSync(tb.sam, "utf8")).toMatch(
        /^---\nname: line-sum\nwalltime: 420s\ndifficulty: easy\nimage: "scifi-harbor-pytest:test"\ncheck_assets: \[checks\/harbor\/tests\/run-tests\.sh, checks\/harbor\/tests\/test\.sh, checks\/harbor\/tests\/test_outputs\.py, checks\/harbor\/verify\.sh\]\n/,
      );
      expect(readFileSync(join(tb.outDir, "numbers.txt"), "utf8")).toBe("3\n14\n-2\n25\n");
      // run-tests.sh's installs mapped; a generated test.sh turns its exit status into the reward.
      const run = readFileSync(join(tb.outDir, "checks/harbor/tests/run-tests.sh"), "utf8");
      const commands = run.split("\n").filter((l) => !l.trimStart().startsWith("#"));
      expect(commands.join("\n")).not.toMatch(/\b(apt-get|curl|uv|pip)\b|activate/);
      expect(run).toContain("python3 -m pytest -p no:cacheprovider $TEST_DIR/test_outputs.py -rA");
      const test = readFileSync(join(tb.outDir, "checks/harbor/tests/test.sh"), "utf8");
      expect(test).toContain(
        "export TEST_DIR=/task/checks/harbor/tests\nif bash /task/checks/harbor/tests/run-tests.sh; then\n  echo 1 > /task/.harbor/verifier/reward.txt",
      );
    });

    it("lists task.yaml's other keys, the compose file and the solution as not mapped", () => {
      for (const key of [
        "author_name",
        "author_email",
        "category",
        "tags",
        "parser_name",
        "run_tests_in_same_shell",
      ])
        expect(tb.unmapped).toContain(`task.yaml ${key}: no SAM key for it`);
      expect(tb.unmapped).toContainEqual(
        expect.stringMatching(
          /^docker-compose\.yaml: a compose file \(services: client\): scifi runs one sandbox/,
        ),
      );
      expect(tb.unmapped).toContainEqual(
        expect.stringMatching(/^solution\.sh is not copied: the agent would see it/),
      );
      expect(tb.mapped).toContainEqual(
        expect.stringMatching(
          /^run-tests\.sh:20: uv pip install pytest: scifi-harbor-pytest:test has pytest [\d.]+ -> dropped$/,
        ),
      );
      expect(tb.unmapped).toContain(
        "task.yaml says nothing of the network: Terminal-Bench allows the internet, scifi denies it; add `network: true` if the task needs it",
      );
      expect(tb.solution).toEqual({ dir: TASK, script: "solution.sh" });
      // The instruction is the To-do, and the solution stays out of the SAM folder.
      expect(readFileSync(tb.sam, "utf8")).toContain(
        "## To-do\n`/app/numbers.txt` holds one integer per line.",
      );
      expect(readFileSync(join(tb.outDir, "harbor-import.md"), "utf8")).toMatch(
        /^# Imported from Terminal-Bench \(task\.yaml\)\n/,
      );
    });

    it("without run-tests.sh runs Terminal-Bench's default, pytest on tests/test_outputs.py", () => {
      const dir = copy();
      rmSync(join(dir, "run-tests.sh"));
      const r = importHarbor(dir, `${dir}-out`, { image: PYTEST_IMAGE });
      expect(readFileSync(join(r.outDir, "checks/harbor/tests/run-tests.sh"), "utf8")).toBe(
        "python3 -m pytest -p no:cacheprovider $TEST_DIR/test_outputs.py -rA\n",
      );
      expect(r.mapped).toContainEqual(
        expect.stringMatching(/^run-tests\.sh \(Terminal-Bench's default\):1: pytest -> the image's pytest/),
      );
    });

    it("says precisely what is wrong with a malformed task.yaml or layout", () => {
      const cases: [string, (dir: string) => void, RegExp][] = [
        [
          "bad YAML",
          (d) => writeFileSync(join(d, "task.yaml"), "instruction: |\n  sum\ndifficulty: [easy\n"),
          /task\.yaml:\d+:\d+: not valid YAML: /,
        ],
        [
          "no instruction",
          (d) => writeFileSync(join(d, "task.yaml"), "difficulty: easy\n"),
          /task\.yaml: no `instruction` \(the task for the agent\)/,
        ],
        [
          "a list as instruction",
          (d) => writeFileSync(join(d, "task.yaml"), "instruction: [a, b]\n"),
          /task\.yaml:1: instruction must be text/,
        ],
        [
          "a timeout in words",
          (d) =>
            writeFileSync(join(d, "task.yaml"), "instruction: sum\nmax_agent_timeout_sec: ten minutes\n"),
          /task\.yaml:2: max_agent_timeout_sec must be a positive number of seconds \(e\.g\. 180\), got "ten minutes"/,
        ],
        [
          "not a mapping",
          (d) => writeFileSync(join(d, "task.yaml"), "- a\n- b\n"),
          /task\.yaml: must be a mapping of keys/,
        ],
        [
          "no tests at all",
          (d) => {
            rmSync(join(d, "run-tests.sh"));
            rmSync(join(d, "tests"), { recursive: true });
          },
          /a Terminal-Bench task needs run-tests\.sh or tests\/ \(its tests\); neither is there/,
        ],
        [
          "a Dockerfile that copies the tests",
          (d) => writeFileSync(join(d, "Dockerfile"), "FROM x\nWORKDIR /app\nCOPY tests/ /app/tests/\n"),
          /Dockerfile line 3: COPY tests would hand the agent the task's tests or solution/,
        ],
        [
          "a test named like the generated one",
          (d) => writeFileSync(join(d, "tests", "test.sh"), "true\n"),
          /tests\/test\.sh: the import generates this name in the hidden tests folder; rename the file/,
        ],
      ];
      for (const [what, breakIt, error] of cases) {
        const dir = copy();
        breakIt(dir);
        expect(attempt(dir), what).toThrow(error);
      }
    });
  },
);
