// States that say what happened, through the real CLI: a run whose sandbox never started is
// "failed to start" with its reason (and the advice is to fix the cause, not `--resume`); a helper
// call is listed apart in `scifi report --index`, never as an unfinished run.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type CliResult, runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";

const SAM = `---
name: no-image
image: scifi-no-such-image:missing
walltime: 5m
iterations: 1
budget_usd: 0.10
---
# A task whose image does not exist

## To-do
Write \`out.txt\`.

## Expectation
- \`out.txt\` exists.
  \`\`\`check timeout=30s
  test -f out.txt
  \`\`\`
`;

let home: string;
let run: CliResult;
let index: CliResult;
let json: CliResult;

describe.skipIf(!hasEngine("docker"))("states that say what happened", () => {
  beforeAll(async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-states-"));
    home = join(root, "home");
    const task = join(root, "task");
    mkdirSync(home);
    mkdirSync(task);
    writeFileSync(join(task, "task.md"), SAM);
    const script = join(REPO, "test", "fixtures", "runs", "gfortran-pass.yaml");
    run = await runScifi(home, ["run", task, "--model", `scripted:${script}`], 300_000);
    json = await runScifi(home, ["run", task, "--json", "--model", `scripted:${script}`], 300_000);
    const ask = await runScifi(
      home,
      [
        "ask",
        "how do I check a task file before running it?",
        "--model",
        `scripted:${join(REPO, "test", "fixtures", "helpers", "ask", "cites.yaml")}`,
      ],
      120_000,
    );
    expect(ask.code).toBe(0);
    index = await runScifi(home, ["report", "--index", join(home, "runs")], 120_000);
  }, 600_000);

  it("a sandbox that never started: exit 1, the reason, and no --resume advice", () => {
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/the image .scifi-no-such-image:missing. is not present/);
    expect(run.stderr).toContain("the sandbox did not start");
    expect(run.stderr).not.toContain("--resume");
    // --json: one summary line saying so.
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ verdict: "error", exitCode: 1 });
  });

  it("its report says `failed to start` with the reason; the helper call is listed apart", () => {
    expect(index.code).toBe(0);
    expect(index.stdout).toMatch(/\(2 runs, 1 helper calls listed apart/);
    const page = readFileSync(join(home, "runs", "index.html"), "utf8");
    const [tasks, helpers] = page.split('id="helper-runs"');
    expect(tasks).toContain('data-status="failed to start"');
    expect(tasks).toContain("the sandbox did not start");
    expect(tasks).not.toContain("still running");
    expect(tasks).not.toMatch(/ask-\d{8}T/);
    expect(helpers).toMatch(/ask-\d{8}T/);
    expect(helpers).toContain('data-status="helper"');
    const runDir = readdirSync(join(home, "runs")).find((d) =>
      d.endsWith(`-no-image-${d.split("-").at(-1)}`),
    );
    const report = readFileSync(join(home, "runs", runDir ?? "", "report.html"), "utf8");
    expect(report).toContain('<span class="status failed to start">failed to start</span>');
  });
});
