// One imported Harbor / Terminal-Bench task run end to end for the import's e2e tests: the import,
// then a real run (Docker sandbox, the runner's checks) with scripted models (over HTTP) whose work
// agent runs `command` (a task's solve.sh, a wrong answer, or nothing) and whose review always
// claims a pass, so only the checks decide.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { type HarborImportOptions, importHarbor } from "../../runner/import/harbor.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { runTask } from "../../runner/run/setup.ts";

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

/** Imports `taskDir` and runs it once with the work agent running `command`. */
export async function runImported(
  taskDir: string,
  command: string | undefined,
  options: HarborImportOptions = {},
) {
  const root = mkdtempSync(join(tmpdir(), `scifi-harbor-e2e-${basename(taskDir)}-`));
  const task = join(root, "task");
  importHarbor(taskDir, task, options);
  const result = await runTask({
    home: root,
    task: join(task, "task.md"),
    backend: "docker",
    model: `scripted:${script(root, command)}`,
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
