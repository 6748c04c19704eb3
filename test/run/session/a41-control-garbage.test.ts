// Attack on issue 41's `scifi ctl` decisions (runner/run/session/control.ts), found by attacker a41. Failed before fix-41a (now passes).
// Doc promise: docs/ctl.md "How it works": each decision is `{action, at, by, limits}` in
// control/; readDecisions says "torn or foreign files skipped"; ctl.md "limits": a value is a
// whole number of iterations, a USD amount above 0, a duration (the CLI checks each).
// What happened: a file with a decision's name whose JSON is whole but not a decision (a careless
// hand edit, another tool, a future version's shape) is applied as is. `{"action":"limits"}` and
// `null` make RunControl.poll() throw a TypeError; poll runs on a setInterval in the process that
// drives the run (and in control.start() before the first phase), so the throw is an uncaught
// exception: the run's process dies mid-phase without its exit path (sandboxes not stopped, hidden
// assets not put back), and every resume meets the same file first and dies again.
// `{"limits":{"usd":null}}` passes the re-check (`null < 0` is false) and makes the purse's cap
// null: the next budget check reads "budget limit reached (USD 0.0000 of null)" and the run fails;
// `{"walltimeSec":"abc"}` makes the deadline NaN, so the wall-time check never fires.
// `scifi ctl` itself writes one: `--budget-usd` of 310 nines parses to Infinity (parseUsd), passes
// every check, exits 0 ("usd 1 → Infinity"), and JSON writes it as `"usd": null` (above).
// The live form (a run's process dying mid-phase, every resume failing on the same file):
// test/attack/a41-garbage-live.e2e.test.ts.
// Suggested fix: validate each decision with a zod schema (action matching the file name, limits
// positive finite numbers, iterations an integer) and record a file that fails as a `control`
// event with `refused` (never throw from poll); and let the timer's poll catch what it throws.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HistoryTape, readHistory } from "../../../runner/memory/history.ts";
import { RunControl } from "../../../runner/run/session/control.ts";
import { DEFAULT_LIMITS, runLimits } from "../../../runner/run/session/limits.ts";
import type { RunState } from "../../../runner/run-folder/state.ts";
import { REPO } from "../harness.ts";

function live() {
  const dir = mkdtempSync(join(tmpdir(), "a41-garbage-"));
  mkdirSync(join(dir, "control"));
  const config = { ...DEFAULT_LIMITS, usd: 1, walltimeSec: 3600, iterations: 3 };
  const limits = runLimits(config, { tokens: 0, usd: 0, elapsedMs: 0 });
  const history = new HistoryTape(join(dir, "history.jsonl"));
  const state = { iteration: 1, attempts: { root: 1 }, limits: config } as unknown as RunState;
  const control = new RunControl(join(dir, "control"), state, history, limits);
  return { dir, config, limits, state, control };
}

describe("a41: a control file that is whole JSON but no decision", () => {
  it.each([
    ["no limits", '{"action":"limits","at":"x","by":"x"}'],
    ["null", "null"],
    ["a number", "7"],
    ["usd null", '{"action":"limits","at":"x","by":"x","limits":{"usd":null}}'],
    ["usd a string", '{"action":"limits","at":"x","by":"x","limits":{"usd":"lots"}}'],
    ["walltime a string", '{"action":"limits","at":"x","by":"x","limits":{"walltimeSec":"abc"}}'],
    ["iterations a fraction", '{"action":"limits","at":"x","by":"x","limits":{"iterations":3.5}}'],
  ])("%s: poll does not throw, the limits stay as they were, the file is recorded as refused", (_, body) => {
    const run = live();
    writeFileSync(join(run.dir, "control", "000001764800000-0123abcd-limits.json"), body);
    expect(() => run.control.poll()).not.toThrow();
    expect(run.config).toMatchObject({ usd: 1, walltimeSec: 3600, iterations: 3 });
    expect(run.limits.budget.exhausted()).toBeUndefined();
    expect(run.limits.clock.leftMs()).toBeGreaterThan(3_500_000);
    const events = readHistory(join(run.dir, "history.jsonl")).filter((e) => e.type === "control");
    expect(events).toMatchObject([{ action: "limits", refused: expect.any(String) }]);
  });
});

it("a41: scifi ctl refuses a --budget-usd that is no finite amount (it would be written as null)", () => {
  const home = mkdtempSync(join(tmpdir(), "a41-inf-"));
  const dir = join(home, "runs", "r-idle");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "state.json"),
    JSON.stringify({
      version: 1,
      runId: "r-idle",
      phase: "work",
      iteration: 1,
      attempts: { root: 1 },
      spent: { tokens: 0, usd: 0, elapsedMs: 1000, at: new Date().toISOString() },
      limits: { ...DEFAULT_LIMITS, usd: 1 },
      resumes: 0,
    }),
  );
  let code = 0;
  try {
    execFileSync(
      process.execPath,
      [join(REPO, "bin/scifi.js"), "ctl", "r-idle", "limits", "--budget-usd", "9".repeat(310)],
      {
        env: { ...process.env, SCIFI_HOME: home },
        stdio: "pipe",
      },
    );
  } catch (error) {
    code = (error as { status: number }).status;
  }
  expect(code).toBe(2);
  const control = join(dir, "control");
  expect(readdirSync(dir).includes("control") ? readdirSync(control) : []).toEqual([]);
});
