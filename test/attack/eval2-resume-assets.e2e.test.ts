// Attack on `scifi eval --resume` (attacker session eval2, a task folder from elsewhere whose
// checks change between two sittings of one eval; written from docs/eval.md "Durability and resume").
// Promise (docs/eval.md): "A suite whose SAM files changed since the eval started is refused on
// resume (its trials would not be comparable)", and "an eval killed and resumed has exactly the
// summary of one that ran straight through". What judges a trial is the SAM *and* its check assets
// (docs/loop.md: the checks run against the runner's pristine copies of them).
// What was done: a task whose check compares out.txt with checks/want.txt (a check asset); a model
// that writes "ok" in every trial; want.txt says "wrong". The eval (2 repeats, one at a time) is
// SIGKILLed after r0's result (fail); then want.txt is changed to "ok" (a `git pull` of the task
// repository, or whoever owns the folder) and the eval is resumed.
// What happened: the resume is accepted (only the SAM files' SHA-256 are in eval.json) and r1 is
// judged by the new check asset: 1 pass, 1 fail, "1/2 50%" for a model that did the same thing
// twice; straight through the eval says 0/2 (or 2/2 with the new asset).
// Fixed: eval.json records every entry of each task folder (runner/eval/task-files.ts); a resume
// refuses a changed one, naming the file, and each trial compares its copy with the plan.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { resumeEval } from "../../runner/eval/engine.ts";
import { evalFiles } from "../../runner/eval/plan.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, killChild, REPO, waitFor } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");

const TASK = `---
name: eval-asset
iterations: 1
budget_usd: 1
check_assets: [checks/want.txt]
---
# Write out.txt

## To-do
Write out.txt.

## Expectation
- \`out.txt\` holds what is wanted.
  \`\`\`check timeout=30s
  cmp out.txt checks/want.txt
  \`\`\`
`;

const MODEL = `prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }
work:
  - tool_calls: [{ name: bash, input: { command: "sleep 6; echo ok > out.txt" } }]
  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]
review:
  - json: { items: [{ id: root/e1, pass: true, evidence: "out.txt" }], findings: [], fixes: [], rank_adjustment: 0 }
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

describe.skipIf(!hasEngine("docker"))("scifi eval --resume after a check asset changed", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("is refused, as a changed SAM file is: the trials would not be judged alike", async () => {
    const root = mkdtempSync(join(tmpdir(), "eval2-resume-assets-"));
    mkdirSync(join(root, "tasks", "a", "checks"), { recursive: true });
    writeFileSync(join(root, "tasks", "a", "task.md"), TASK);
    writeFileSync(join(root, "tasks", "a", "checks", "want.txt"), "wrong\n");
    writeFileSync(join(root, "m.yaml"), MODEL);
    writeFileSync(
      join(root, "suite.yaml"),
      "tasks: [tasks/a]\nmodels: [{ name: m, spec: 'scripted:m.yaml' }]\nrepeats: 2\nconcurrency: 1\n",
    );
    const home = join(root, "home");
    mkdirSync(home);
    const child = spawn(process.execPath, [CLI, "eval", join(root, "suite.yaml")], {
      env: { ...process.env, SCIFI_HOME: home },
      stdio: "ignore",
    });
    const evals = join(home, "evals");
    const evalId = await waitFor(() => (existsSync(evals) ? readdirSync(evals)[0] : undefined), 120_000, 50);
    const evalDir = join(evals, evalId);
    await waitFor(
      () => (existsSync(evalFiles(evalDir).result("a.default.m.r0")) ? true : undefined),
      300_000,
      50,
    );
    await killChild(child);
    expect(existsSync(evalFiles(evalDir).result("a.default.m.r1"))).toBe(false);

    writeFileSync(join(root, "tasks", "a", "checks", "want.txt"), "ok\n");
    // Before a fix: resolves, with { pass: 1, fail: 1 } (r1 judged by the new want.txt).
    await expect(resumeEval({ home, evalId, retry: { maxRetries: 0, baseDelayMs: 1 } })).rejects.toThrow(
      /want\.txt/,
    );
  }, 600_000);
});
