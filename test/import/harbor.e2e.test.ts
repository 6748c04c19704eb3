// Imported Harbor tasks run end to end (real Docker sandbox, the runner's checks, scripted models
// over HTTP): with the task's own solution/solve.sh run by the work agent they pass; without it
// they fail, even with a review that claims a pass; with a wrong answer (one metric of several
// wrong) the run stage passes and Harbor's hidden tests fail it, through the compare stage and its
// reward (reward.txt; every metric of reward.json).
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { importHarbor } from "../../runner/import/harbor.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../loop/harness.ts";

const FIXTURES = join(REPO, "test", "fixtures", "harbor");
/** A wrong answer per task: the table's first line only; two of the three statistics right. */
const WRONG: Record<string, { command: string; output: RegExp }> = {
  "word-count": { command: "echo '4 the' > counts.txt", output: /below 1\.0: reward/ },
  "csv-stats": {
    command: `echo '{"count": 5, "mean": 3.0, "max": 10.0}' > stats.json`,
    output: /count = 1\.0\nmean = 0\.0\nmax = 1\.0\n[\s\S]*below 1\.0: mean/,
  },
};

/** A scripted model whose work runs `command` (or nothing) and whose review always claims a pass. */
function script(dir: string, command: string | undefined): string {
  const work = [
    ...(command === undefined ? [] : [{ tool_calls: [{ name: "bash", input: { command } }] }]),
    { tool_calls: [{ name: "report_done", input: { claim: "done", summary: "ran the task" } }] },
  ];
  const file = join(dir, "script.yaml");
  // JSON is YAML: the script file is written as JSON so solve.sh's text needs no YAML quoting.
  writeFileSync(
    file,
    JSON.stringify({
      prescan: [
        { json: { node: "root", rank: 1, skills: [], context: "", plan: "solve", direction: "solve" } },
      ],
      work,
      review: [
        {
          json: {
            items: [{ id: "root/e1", pass: true, evidence: "claimed" }],
            findings: [],
            fixes: [],
            rank_adjustment: 0,
          },
        },
      ],
      final_review: [{ json: { group_suggestions: [], global_suggestions: [] } }],
    }),
  );
  return file;
}

async function run(name: string, answer: "solution" | "nothing" | "wrong") {
  const root = mkdtempSync(join(tmpdir(), `scifi-harbor-e2e-${name}-`));
  const task = join(root, "task");
  importHarbor(join(FIXTURES, name), task);
  const solve = readFileSync(join(FIXTURES, name, "solution", "solve.sh"), "utf8");
  const result = await runTask({
    home: root,
    task: join(task, "task.md"),
    backend: "docker",
    model: `scripted:${script(root, answer === "solution" ? solve : answer === "wrong" ? WRONG[name]?.command : undefined)}`,
    limits: { iterations: 1 },
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
  });
  const checks = readHistory(join(result.dir, "history.jsonl")).flatMap((e) =>
    e.type === "check" ? [[e.check, e.passed]] : [],
  );
  const outputs = join(result.dir, "check-output");
  const compare = readdirSync(outputs)
    .filter((f) => f.includes("check-2"))
    .map((f) => readFileSync(join(outputs, f), "utf8"))
    .join("");
  return { result, checks, task, compare };
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
