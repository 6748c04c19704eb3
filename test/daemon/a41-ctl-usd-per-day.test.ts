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
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runBudgetUsd } from "../../runner/daemon/spend.ts";
import { DEFAULT_LIMITS } from "../../runner/run/session/limits.ts";
import { scifi, writePausedDaemonTask, writePausedRun } from "../run/session/paused-run.ts";

it("a41: ctl refuses a daemon task's budget past the site's usdPerDay", async () => {
  const home = join(mkdtempSync(join(tmpdir(), "a41-perday-")), "home");
  mkdirSync(home);
  writeFileSync(join(home, "site-policy.yaml"), "usdPerDay: 5\n");
  const runId = "20261204-030000-t-aaaaaa";
  const spent = { tokens: 0, usd: 0.2, elapsedMs: 60_000, at: new Date().toISOString() };
  const dir = writePausedRun(home, runId, { spent, limits: { ...DEFAULT_LIMITS, usd: 1 } });
  writePausedDaemonTask(home, runId);
  const r = await scifi(home, ["ctl", "t", "limits", "--budget-usd", "50"]);
  expect(r.code, r.out).toBe(2);
  expect(r.out).toContain("usdPerDay");
  expect(r.out).toContain("give at most 5");
  // Nothing was written for the run to apply.
  expect(existsSync(join(dir, "control")) ? readdirSync(join(dir, "control")) : []).toEqual([]);
  // A raise within the limit is taken, and the daemon reserves the run's live cap once applied.
  const ok = await scifi(home, ["ctl", "t", "limits", "--budget-usd", "4"]);
  expect(ok.out).toContain("usd 1 → 4");
  expect(runBudgetUsd(home, runId, 1)).toBe(1);
  const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
  writeFileSync(join(dir, "state.json"), JSON.stringify({ ...state, limits: { ...state.limits, usd: 4 } }));
  expect(runBudgetUsd(home, runId, 1)).toBe(4);
});

it("a41: ctl refuses a walltime past the site policy's maxWalltime, for any run", async () => {
  const home = join(mkdtempSync(join(tmpdir(), "a41-maxwall-")), "home");
  mkdirSync(home);
  writeFileSync(join(home, "site-policy.yaml"), "maxWalltime: 2h\n");
  const runId = "20261204-030000-direct-aaaaaa";
  writePausedRun(home, runId);
  const r = await scifi(home, ["ctl", runId, "limits", "--walltime", "3h"]);
  expect(r.code, r.out).toBe(2);
  expect(r.out).toContain("maxWalltime (7200 s");
});
