// Attack on `scifi ctl <run> limits --budget-usd` of a daemon task against the site's daily money
// limit (runner/cli/commands/ctl.ts, runner/daemon/scheduler.ts), found by attacker a41. FAILS today.
// Doc promise: docs/daemon.md "Queue", Money: "`usdPerDay` in the site policy limits what all runs
// may spend per UTC day ... reserves the unspent budget of running ones, and starts a task only
// when its own `budget_usd` still fits ... A budget larger than the daily limit is rejected."
// What happened: with `usdPerDay: 5`, a daemon task's run (budget_usd 1) is given `scifi ctl <run>
// limits --budget-usd 50`: accepted, exit 0, and the run applies it. The daily limit is checked
// nowhere on this path, and the daemon keeps reserving the task record's `budgetUsd` (1, never
// updated) for the running task, so it starts other tasks against money this run may now spend:
// the site's daily limit no longer holds. A SAM asking for the same 50 would have been rejected.
// Suggested fix: in ctl, refuse a raise past the site's usdPerDay for a daemon task's run (naming
// it), and update the task record's budgetUsd with an applied change so the scheduler reserves
// the new cap (or have the scheduler read the run's live limits from its state.json).
// Move to test/daemon/ once fixed.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { writeTask } from "../../runner/daemon/records.ts";
import { DEFAULT_LIMITS } from "../../runner/run/limits.ts";
import { REPO } from "../loop/harness.ts";

const exec = promisify(execFile);

it("a41: ctl refuses a daemon task's budget past the site's usdPerDay", async () => {
  const home = join(mkdtempSync(join(tmpdir(), "a41-perday-")), "home");
  mkdirSync(home);
  writeFileSync(join(home, "site-policy.yaml"), "usdPerDay: 5\n");
  const runId = "20261204-030000-t-aaaaaa";
  const dir = join(home, "runs", runId);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "state.json"),
    JSON.stringify({
      version: 1,
      runId,
      phase: "work",
      iteration: 1,
      attempts: { root: 1 },
      spent: { tokens: 0, usd: 0.2, elapsedMs: 60_000, at: new Date().toISOString() },
      limits: { ...DEFAULT_LIMITS, usd: 1 },
      resumes: 0,
      paused: { at: "2026-12-04T03:00:00.000Z", phase: "work", reason: "paused by x@y" },
    }),
  );
  mkdirSync(join(home, "tasks"), { recursive: true });
  writeTask(home, {
    version: 1,
    key: "t",
    kind: "file",
    source: join(home, "tasks", "t"),
    samFile: join(home, "tasks", "t"),
    sha256: "0".repeat(64),
    state: "paused",
    gpus: 0,
    budgetUsd: 1,
    queuedAt: "2026-12-04T02:59:00.000Z",
    updatedAt: "2026-12-04T03:00:00.000Z",
    attempts: [{ n: 1, runId, startedAt: "2026-12-04T03:00:00.000Z", resumes: 0 }],
  } as unknown as Parameters<typeof writeTask>[1]);
  const r = await exec(
    process.execPath,
    [join(REPO, "bin/scifi.js"), "ctl", "t", "limits", "--budget-usd", "50"],
    {
      env: { ...process.env, SCIFI_HOME: home },
    },
  ).then(
    (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
  expect(r.code, r.out).toBe(2);
  expect(r.out).toContain("usdPerDay");
});
