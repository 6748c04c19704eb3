// Found by the issue-25 attacker session (was test/open/a25-outcome-line.e2e.pending.ts). Fixed: the
// closing line shows the reason escaped (runner/terminal-text.ts visible), as the worker and daemon log do.
// Attacker session for issue 25 (A25-11): the outcome line `scifi run` prints at its end carries the
// agent's blocker reason raw (SLURM not needed; Docker, scripted agent: test/fixtures/attack25/blocked.yaml).
//
// Docs promise (issue 25 point 3, trust rule 11, docs/approval.md "What the person reads"): one
// escaping routine for every terminal listing of agent-written text; "control characters ... are
// shown as escapes, never sent".
//
// What happened: runner/cli/commands/run.ts `summary()` prints `${STATUS}: ${outcome.reason}`, and a
// blocked run's reason is the agent's `report_blocker` text, unescaped: a CR, `ESC[2K` and `ESC[1A`
// erase the BLOCKED line and draw "PASSED: every check and review item passed" in its place, and
// `ESC[8m` hides what follows. (The list in docs/approval.md does not name `scifi run`'s own output,
// but it is the first thing a person reads of a run.)
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");
const FIXTURES = join(REPO, "test", "fixtures", "attack25");
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!hasEngine("docker"))("A25-11: the outcome line of scifi run", () => {
  it("a blocked run's reason reaches the terminal with its control characters escaped", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a25-outcome-"));
    roots.push(root);
    const home = join(root, "home");
    const taskDir = join(root, "task");
    mkdirSync(home);
    mkdirSync(taskDir);
    writeFileSync(join(taskDir, "task.md"), readFileSync(join(FIXTURES, "blocked.md"), "utf8"));
    let stdout = "";
    let stderr = "";
    const child = spawn(
      process.execPath,
      [CLI, "run", join(taskDir, "task.md"), "--model", `scripted:${join(FIXTURES, "blocked.yaml")}`],
      { cwd: root, env: { ...process.env, SCIFI_HOME: home }, stdio: ["ignore", "pipe", "pipe"] },
    );
    child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
    expect(code, stderr).toBe(3);
    const all = stdout + stderr;
    expect(all).toContain("BLOCKED");
    expect(
      [...all].filter((c) => c === "\x1b" || c === "\r"),
      all,
    ).toEqual([]);
  }, 300_000);
});
