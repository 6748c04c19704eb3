// Attacks on issue 41's `scifi ctl` and issue 42's one clock, purse and stop (attacker a41d) that
// held: a money cap lowered to exactly what is spent, a wall time lowered to just above what has
// run, a pause asked for when the deadline comes, and a home inside the task folder (the agent would
// reach control/). What broke is in test/open/a41d-*.pending.ts.
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { HistoryTape, readHistory } from "../../runner/memory/history.ts";
import { RunControl, writeDecision } from "../../runner/run/session/control.ts";
import { DEFAULT_LIMITS, runLimits, WallTimeReached } from "../../runner/run/session/limits.ts";
import type { RunState } from "../../runner/run-folder/state.ts";
import { REPO } from "../run/harness.ts";

const exec = promisify(execFile);
const by = "a41d@attacker";

function live(spent = { tokens: 0, usd: 0, elapsedMs: 0 }) {
  const dir = mkdtempSync(join(tmpdir(), "a41d-held-"));
  const controlDir = join(dir, "control");
  mkdirSync(controlDir);
  const config = { ...DEFAULT_LIMITS, usd: 1, walltimeSec: 3600, iterations: 3 };
  const limits = runLimits(config, spent);
  const history = new HistoryTape(join(dir, "history.jsonl"));
  const state = { iteration: 1, attempts: { root: 1 }, limits: config } as unknown as RunState;
  const control = new RunControl(controlDir, state, history, limits);
  const controls = () => readHistory(join(dir, "history.jsonl")).filter((e) => e.type === "control");
  return { controlDir, config, limits, control, controls };
}

describe("a41d held: one clock, one purse, one stop", () => {
  it("a cap lowered to exactly the spend is applied, and the gateway's purse and the budget check both stop", () => {
    const run = live({ tokens: 500, usd: 0.25, elapsedMs: 1_000 });
    expect(run.limits.purse.over()).toBeUndefined();
    writeDecision(run.controlDir, { action: "limits", at: "", by, limits: { usd: 0.25 } });
    run.control.poll();
    expect(run.controls()).toMatchObject([{ action: "limits", from: { usd: 1 }, to: { usd: 0.25 } }]);
    // Both consumers read the one purse: the gateway refuses the next call, the budget check agrees.
    expect(run.limits.purse.over()).toMatch(/budget of 0\.25 USD is spent/);
    expect(run.limits.budget.exhausted()).toMatch(/budget limit reached \(USD 0\.2500 of 0\.25\)/);
  });

  it("a wall time lowered to just above what has run ends the run at the new deadline, with that reason", async () => {
    const run = live({ tokens: 0, usd: 0, elapsedMs: 5_500 });
    run.limits.clock.start();
    // 5.5 s have run: 5 s is below it, 6 s is not (and ends the run half a second later).
    writeDecision(run.controlDir, { action: "limits", at: "", by, limits: { walltimeSec: 5 } });
    run.control.poll();
    writeDecision(run.controlDir, { action: "limits", at: "", by, limits: { walltimeSec: 6 } });
    run.control.poll();
    expect(run.controls()).toMatchObject([
      {
        action: "limits",
        refused: expect.stringMatching(/--walltime 5 s is below the \d+ s the run has already run/),
      },
      { action: "limits", to: { walltimeSec: 6 } },
    ]);
    // A pause asked for meanwhile does not hide why the run ended.
    run.limits.stop.pause("paused by a41d");
    expect(run.limits.stop.signal.aborted).toBe(false);
    await new Promise((r) => setTimeout(r, 900));
    expect(run.limits.stop.signal.aborted).toBe(true);
    const ending = run.limits.stop.ending();
    expect(ending).toBeInstanceOf(WallTimeReached);
    expect(ending?.message).toBe("wall time limit reached (6 s)");
    expect(run.limits.budget.exhausted()).toBe("wall time limit reached (6 s)");
    expect(run.limits.clock.leftMs()).toBe(0);
    run.limits.clock.stop();
  });
});

describe("a41d held: the agent cannot reach control/", () => {
  it("a home inside the task folder (its runs/ would be mounted read-write) is refused before anything runs", async () => {
    const root = mkdtempSync(join(tmpdir(), "a41d-home-in-task-"));
    const task = join(root, "task");
    cpSync(join(REPO, "tasks", "examples", "gfortran-build-run"), task, { recursive: true });
    const home = join(task, ".scifi");
    const result = await exec(
      process.execPath,
      [
        join(REPO, "bin", "scifi.js"),
        "run",
        task,
        "--model",
        "scripted:/nonexistent.yaml",
        "--backend",
        "docker",
      ],
      { env: { ...process.env, SCIFI_HOME: home }, timeout: 60_000 },
    ).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/task folder contains the runner's state folder \(runs\/\)/);
    expect(existsSync(join(home, "runs"))).toBe(false);
  });
});
