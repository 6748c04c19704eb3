// Attack on `scifi ctl <run> resume` of a daemon task cancelled while paused
// (runner/cli/commands/ctl.ts), found by attacker a41. Failed before fix-41a (now passes).
// Doc promise: docs/ctl.md "Exit codes": 2 "refused: unknown or ended run, a limit below what is
// used, nothing to pause or resume, bad flags"; "How it works": each decision is one file,
// "never rewritten" (a decision written is one the run will apply).
// What happened: a paused daemon task is cancelled (`scifi cancel t`: "cancelled by the operator
// while paused (its run keeps its checkpoint)"); `scifi ctl <run> resume` then writes a resume
// decision into the run's control/ first and only afterwards asks the daemon's operator, which
// refuses: "task t is cancelled; resume applies to a paused task", exit 1 (not 2). The stray
// decision stays in control/ and is applied by whatever resumes that run next.
// Suggested fix: check the task's state (and everything else that can refuse) before writing the
// decision; refuse with CtlRefused (exit 2).
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../../runner/run/session/limits.ts";
import { scifi, writePausedDaemonTask, writePausedRun } from "./paused-run.ts";

const SPENT = { tokens: 0, usd: 0.2, elapsedMs: 60_000, at: new Date().toISOString() };

it("a41: ctl resume of a cancelled task's paused run is refused, exit 2, nothing written", async () => {
  const home = join(mkdtempSync(join(tmpdir(), "a41-cancelled-")), "home");
  const runId = "20261204-030000-t-aaaaaa";
  const dir = writePausedRun(home, runId, { spent: SPENT, limits: { ...DEFAULT_LIMITS, usd: 1 } });
  writePausedDaemonTask(home, runId);
  const cancelled = await scifi(home, ["cancel", "t"]);
  expect(cancelled.code, cancelled.out).toBe(0);

  const r = await scifi(home, ["ctl", runId, "resume"]);
  expect(r.out).toContain("cancelled");
  expect(r.code, r.out).toBe(2);
  expect(existsSync(join(dir, "control")) ? readdirSync(join(dir, "control")) : []).toEqual([]);
});

it("a41 (fixed): scifi run --resume of a paused daemon task's run is refused, exit 2, naming ctl resume", async () => {
  const home = join(mkdtempSync(join(tmpdir(), "a41-owned-")), "home");
  const runId = "20261204-030000-t-bbbbbb";
  const paused = { at: "2026-12-04T03:00:00.000Z", phase: "work", reason: "paused by x@y" } as const;
  const dir = writePausedRun(home, runId, { spent: SPENT, limits: { ...DEFAULT_LIMITS, usd: 1 }, paused });
  writePausedDaemonTask(home, runId);
  const r = await scifi(home, ["run", "--resume", runId]);
  expect(r.code, r.out).toBe(2);
  expect(r.out).toContain("daemon task t (paused)");
  expect(r.out).toContain("scifi ctl t resume");
  expect(JSON.parse(readFileSync(join(dir, "state.json"), "utf8"))).toMatchObject({ paused, resumes: 0 });
});
