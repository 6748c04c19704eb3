import { chmodSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";

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

const cli = (home: string, args: string[]) => runScifi(home, args, 300_000);

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
