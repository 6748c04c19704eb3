// Runs that a tool started and reads, and nobody resumes (a41d-ctl-check-task, a41d-ctl-eval-trial):
// `scifi check-task`'s audit runs and `scifi eval`'s trials (state.json `startedBy`) take no pause,
// and an eval trial's limits are its eval's plan. `scifi ctl` refuses up front (exit 2, saying why,
// nothing written); a decision file that reaches the run anyway is refused on its history. No
// engine: the run folders are written by hand, the history and decisions are the real files.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { HistoryTape, readHistory } from "../../../runner/memory/history.ts";
import { RunControl, writeDecision } from "../../../runner/run/session/control.ts";
import { DEFAULT_LIMITS, runLimits } from "../../../runner/run/session/limits.ts";
import type { RunStarter, RunState } from "../../../runner/run-folder/state.ts";
import { REPO } from "../harness.ts";

const exec = promisify(execFile);
const EVAL: RunStarter = { tool: "eval", evalId: "20261204-ev", trialId: "t0001" };
const CHECK: RunStarter = { tool: "check-task", audit: "untouched" };

async function ctl(home: string, args: string[]): Promise<{ code: number; out: string }> {
  return exec(process.execPath, [join(REPO, "bin/scifi.js"), "ctl", ...args], {
    env: { ...process.env, SCIFI_HOME: home },
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
}

/** A run folder with a state.json started by `startedBy`, driven by this (live) process. */
function run(home: string, id: string, startedBy: RunStarter): string {
  const dir = join(home, "runs", id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "state.json"),
    JSON.stringify({
      version: 1,
      runId: id,
      phase: "work",
      iteration: 1,
      attempts: { root: 1 },
      spent: { tokens: 0, usd: 0, elapsedMs: 1000, at: new Date().toISOString() },
      limits: { ...DEFAULT_LIMITS, iterations: 3 },
      resumes: 0,
      startedBy,
    }),
  );
  return dir;
}

describe("scifi ctl on a run a tool started", () => {
  const home = join(mkdtempSync(join(tmpdir(), "a41d-started-by-")), "home");
  const trial = run(home, "r-trial", EVAL);
  const audit = run(home, "r-audit", CHECK);

  it.each([
    [
      ["r-trial", "limits", "--iterations", "9", "--budget-usd", "7"],
      "run r-trial is trial t0001 of eval 20261204-ev: its limits are the eval's plan (eval.json tasks[].limits), the same for every trial it compares, so ctl does not change them; the eval's own knobs are the suite's limits: (for a new eval) and its budget ('scifi eval --resume 20261204-ev --budget-usd X')",
    ],
    [
      ["r-trial", "pause"],
      "run r-trial is trial t0001 of eval 20261204-ev: the eval reads its outcome and nobody resumes it, so it takes no pause; stop the eval (Ctrl-C) and continue it with 'scifi eval --resume 20261204-ev'",
    ],
    [
      ["r-audit", "pause"],
      "run r-audit is scifi check-task's 'untouched' audit run: check-task reads its outcome and nobody resumes it, so it takes no pause",
    ],
  ])("refuses %j, exit 2, writing nothing", async (args, said) => {
    const r = await ctl(home, args);
    expect(r.code, r.out).toBe(2);
    expect(r.out).toContain(said);
    expect(existsSync(join(trial, "control"))).toBe(false);
    expect(existsSync(join(audit, "control"))).toBe(false);
  });

  it("a check-task audit's limits may still change (they compare nothing across runs)", async () => {
    const r = await ctl(home, ["r-audit", "limits", "--iterations", "4"]);
    expect(r.code, r.out).toBe(0);
    expect(existsSync(join(audit, "control"))).toBe(true);
  });
});

describe("the run refuses such a decision found in control/", () => {
  function controlled(startedBy: RunStarter) {
    const dir = mkdtempSync(join(tmpdir(), "a41d-started-by-run-"));
    const config = { ...DEFAULT_LIMITS, iterations: 3, usd: 1 };
    const limits = runLimits(config, { tokens: 0, usd: 0, elapsedMs: 0 });
    const state = {
      runId: "r",
      iteration: 1,
      attempts: { root: 1 },
      limits: config,
      startedBy,
    } as unknown as RunState;
    const history = new HistoryTape(join(dir, "history.jsonl"));
    const control = new RunControl(join(dir, "control"), state, history, limits);
    mkdirSync(join(dir, "control"));
    const decide = (d: Parameters<typeof writeDecision>[1]) => writeDecision(join(dir, "control"), d);
    const events = () => readHistory(join(dir, "history.jsonl")).filter((e) => e.type === "control");
    return { config, limits, control, decide, events };
  }
  const at = new Date().toISOString();
  const by = "a41d@login";

  it("an eval trial: a pause and a limits change are refused, on its history; nothing changes", () => {
    const r = controlled(EVAL);
    r.decide({ action: "limits", at, by, limits: { iterations: 9, usd: 7 } });
    r.decide({ action: "pause", at, by });
    r.control.poll();
    expect(r.limits.stop.pauseRequested).toBeUndefined();
    expect(r.config).toMatchObject({ iterations: 3, usd: 1 });
    expect(r.limits.purse.usd).toBe(0);
    expect(r.events()).toEqual([
      expect.objectContaining({ action: "limits", refused: expect.stringContaining("the eval's plan") }),
      expect.objectContaining({ action: "pause", refused: expect.stringContaining("takes no pause") }),
    ]);
  });

  it("a check-task audit: a pause is refused, a limits change applies", () => {
    const r = controlled(CHECK);
    r.decide({ action: "pause", at, by });
    r.decide({ action: "limits", at, by, limits: { iterations: 4 } });
    r.control.poll();
    expect(r.limits.stop.pauseRequested).toBeUndefined();
    expect(r.config.iterations).toBe(4);
    expect(
      r.events().map((e) => (e.type === "control" ? [e.action, e.refused ? "refused" : "applied"] : [])),
    ).toEqual([
      ["pause", "refused"],
      ["limits", "applied"],
    ]);
  });
});
