// Attack on `scifi ctl <run> resume` (runner/cli/commands/ctl.ts), found by attacker a41. Failed before fix-41a (now passes).
// Doc promise: docs/ctl.md: "A `resume` typed before a pause was taken withdraws the pause"; "A
// change to a paused run (or one whose process died) applies when it resumes".
// What happened: a pause was asked, then the run's process ended before the boundary (SIGTERM,
// exit 143, a crash; see "SIGTERM while a pause is pending" in test/attack/a41-held.e2e.test.ts).
// The pause was never taken and still stands (the next `scifi run --resume` takes it at once and
// exits 5). A person who types `scifi ctl <run> resume` to withdraw it is refused, exit 2: "run
// ... is not paused; nothing to resume" (ctl.ts accepts a withdrawal only while a live process
// drives the run). To get the run going they must resume it, watch it pause at once, and resume
// it again.
// Suggested fix: with a pause pending and no live process, write the resume decision (it withdraws
// the pause when the run resumes) and say so ("the pending pause is withdrawn; continue it with
// scifi run --resume <run>"), exit 0.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { readDecisions, writeDecision } from "../../../runner/run/session/control.ts";
import { DEFAULT_LIMITS } from "../../../runner/run/session/limits.ts";
import { REPO } from "../harness.ts";

const exec = promisify(execFile);

it("a41: ctl resume withdraws a pause that was asked and never taken (the process ended first)", async () => {
  const home = join(mkdtempSync(join(tmpdir(), "a41-withdraw-")), "home");
  const dir = join(home, "runs", "r-stopped");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "state.json"),
    JSON.stringify({
      version: 1,
      runId: "r-stopped",
      phase: "prescan",
      iteration: 1,
      attempts: { root: 1 },
      spent: { tokens: 0, usd: 0.01, elapsedMs: 5000, at: new Date().toISOString() },
      limits: { ...DEFAULT_LIMITS },
      resumes: 0,
    }),
  );
  writeDecision(join(dir, "control"), { action: "pause", at: new Date().toISOString(), by: "x@y" });
  const r = await exec(process.execPath, [join(REPO, "bin/scifi.js"), "ctl", "r-stopped", "resume"], {
    env: { ...process.env, SCIFI_HOME: home },
  }).then(
    (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
  expect(r.code, r.out).toBe(0);
  expect(readDecisions(join(dir, "control"), undefined).map((d) => d.decision.action)).toEqual([
    "pause",
    "resume",
  ]);
});
