// Attack on the task-folder record of `scifi eval` (attacker session eval3; from docs/eval.md).
// Promise (docs/eval.md, "Durability and resume"): "The task folders are the plan's. A SAM file, or
// any other entry of a task folder (a check asset, ...), that changed since the eval started is
// refused on resume, naming the entry", and the trials are "never ... judged by other checks than
// their siblings".
// What was done: a task whose check runs its check asset as a program (`./checks/ok.sh`, mode
// 0755). The eval is planned and stopped by a budget of 0 (nothing runs). Then `chmod -x
// checks/ok.sh` (what a `git checkout` with core.fileMode, a copy through a FAT/SMB share, or a
// hostile co-user does): the bytes are the same, but the check now fails with "Permission denied"
// in every later trial. `scifi eval --resume <id> --budget-usd 0` is run (budget 0 again: nothing
// would run either way; only the refusal is asked about).
// What happened: the resume is accepted (exit 1, "budget spent"), not refused (exit 2): eval.json
// records a file by its SHA-256 only (runner/eval/task-files.ts), never its mode, and the trial's
// own copy check (freshCopy) compares the same record, so the later trials would run with a check
// that can no longer pass while the earlier ones were judged by a check that could.
// Fixed: a file's entry in eval.json carries its permission bits (`file <mode> <sha256>`).
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../loop/harness.ts";

const exec = promisify(execFile);
const CLI = join(REPO, "bin", "scifi.js");

const TASK = `---
name: eval3-mode
iterations: 1
budget_usd: 1
check_assets: [checks/ok.sh]
---
# Run the check

## To-do
Write out.txt.

## Expectation
- The check script passes.
  \`\`\`check timeout=30s
  ./checks/ok.sh
  \`\`\`
`;

const MODEL = `prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }
work:
  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]
review:
  - json: { items: [{ id: root/e1, pass: true, evidence: "ok" }], findings: [], fixes: [], rank_adjustment: 0 }
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

type Ran = { code: number; stdout: string; stderr: string };
async function cli(home: string, args: string[]): Promise<Ran> {
  return exec(process.execPath, [CLI, ...args], {
    env: { ...process.env, SCIFI_HOME: home },
    timeout: 300_000,
  })
    .then((r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }))
    .catch((e: Ran) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }));
}

describe.skipIf(!hasEngine("docker"))("scifi eval --resume after a check script lost its x bit", () => {
  it("is refused, as a changed check asset is", async () => {
    const root = mkdtempSync(join(tmpdir(), "eval3-mode-"));
    mkdirSync(join(root, "tasks", "a", "checks"), { recursive: true });
    writeFileSync(join(root, "tasks", "a", "task.md"), TASK);
    writeFileSync(join(root, "tasks", "a", "checks", "ok.sh"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    chmodSync(join(root, "tasks", "a", "checks", "ok.sh"), 0o755);
    writeFileSync(join(root, "m.yaml"), MODEL);
    const home = join(root, "home");
    mkdirSync(home);
    const first = await cli(home, [
      "eval",
      join(root, "tasks"),
      "--models",
      `scripted:${join(root, "m.yaml")}`,
      "--budget-usd",
      "0",
    ]);
    expect(first.code).toBe(1);
    const evalId = readdirSync(join(home, "evals"))[0] as string;
    chmodSync(join(root, "tasks", "a", "checks", "ok.sh"), 0o644);
    const resumed = await cli(home, ["eval", "--resume", evalId, "--budget-usd", "0"]);
    // Before a fix: exit 1 ("budget spent"), the folder accepted.
    expect(resumed.stderr).toContain("changed since the eval started");
    expect(resumed.code).toBe(2);
  }, 600_000);
});
