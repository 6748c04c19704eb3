// `scifi ctl` refusals exit 2 with what failed and what to do; a limit change to a run no process
// drives is written for its resume (no engine needed: the run folders here are written by hand).
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../../runner/run/session/limits.ts";
import { REPO } from "../harness.ts";

const exec = promisify(execFile);

async function ctl(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(process.execPath, [join(REPO, "bin/scifi.js"), "ctl", ...args], {
    env: { ...process.env, SCIFI_HOME: home },
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}

/** A run folder with only a state.json (no process drives it). */
function run(home: string, id: string, state: Record<string, unknown>): string {
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
      spent: { tokens: 0, usd: 0.2, elapsedMs: 60_000, at: new Date().toISOString() },
      limits: { ...DEFAULT_LIMITS, usd: 1, iterations: 3, walltimeSec: 3600 },
      resumes: 0,
      ...state,
    }),
  );
  return dir;
}

describe("scifi ctl: refusals exit 2", () => {
  const home = join(mkdtempSync(join(tmpdir(), "scifi-ctl-cli-")), "home");
  mkdirSync(home);
  const idle = run(home, "r-idle", {});
  run(home, "r-paused", {
    paused: { at: "2026-12-04T03:00:00.000Z", phase: "work", reason: "paused by x@y" },
  });
  run(home, "r-ended", { phase: "ended", outcome: { status: "passed", reason: "all verified" } });

  it.each([
    [["nope", "pause"], "no run 'nope' under"],
    [["r-ended", "pause"], "run r-ended already ended (passed: all verified); nothing to control"],
    [["r-idle", "stop"], "unknown action 'stop'; actions: limits, pause, resume"],
    [
      ["r-idle", "pause", "--iterations", "3"],
      "--iterations, --budget-usd and --walltime go with 'limits', not 'pause'",
    ],
    [["r-idle", "limits"], "limits: give at least one of --iterations N, --budget-usd X, --walltime D"],
    [["r-idle", "limits", "--walltime", "soon"], "--walltime soon: give a duration"],
    [["r-idle", "limits", "--iterations", "1.5"], "--iterations 1.5: give a whole number of at least 1"],
    [
      ["r-idle", "limits", "--budget-usd", "0.1"],
      "run r-idle: --budget-usd 0.1 is below the USD 0.2000 already spent",
    ],
    [
      ["r-idle", "limits", "--walltime", "30s"],
      "run r-idle: --walltime 30 s is below the 60 s the run has already run",
    ],
    [["r-idle", "pause"], "run r-idle is not running (no live process drives it); nothing to pause"],
    [["r-idle", "resume"], "run r-idle is not paused; nothing to resume"],
    [["r-paused", "pause"], "run r-paused is already paused (since 2026-12-04T03:00:00.000Z)"],
  ])("scifi ctl %j", async (args, message) => {
    const r = await ctl(home, args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`scifi ctl: ${message}`);
  });

  it("a limit change to a paused run is written for its resume, whole, with who made it", async () => {
    const r = await ctl(home, ["r-paused", "limits", "--budget-usd", "2.5", "--walltime", "2h"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      "run r-paused: usd 1 → 2.5, walltimeSec 3600 → 7200; applied when the run resumes\n",
    );
    const dir = join(home, "runs", "r-paused", "control");
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^\d{15}-\d{6}[0-9a-f]{8}-limits\.json$/);
    expect(JSON.parse(readFileSync(join(dir, files[0] ?? ""), "utf8"))).toMatchObject({
      action: "limits",
      by: expect.stringMatching(/.+@.+/),
      limits: { usd: 2.5, walltimeSec: 7200 },
    });
    // Nothing was written for the refused ones.
    expect(() => readdirSync(join(idle, "control"))).toThrow();
  });
});
