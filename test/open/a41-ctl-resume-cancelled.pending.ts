// Attack on `scifi ctl <run> resume` of a daemon task cancelled while paused
// (runner/cli/commands/ctl.ts), found by attacker a41. FAILS today.
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
// Move to test/run/ once fixed.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { writeTask } from "../../runner/daemon/records.ts";
import { DEFAULT_LIMITS } from "../../runner/run/limits.ts";
import { REPO } from "../loop/harness.ts";

const exec = promisify(execFile);

async function scifi(home: string, args: string[]) {
  return exec(process.execPath, [join(REPO, "bin/scifi.js"), ...args], {
    env: { ...process.env, SCIFI_HOME: home },
  }).then(
    (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
}

it("a41: ctl resume of a cancelled task's paused run is refused, exit 2, nothing written", async () => {
  const home = join(mkdtempSync(join(tmpdir(), "a41-cancelled-")), "home");
  const runId = "20261204-030000-t-aaaaaa";
  const dir = join(home, "runs", runId);
  mkdirSync(dir, { recursive: true });
  mkdirSync(join(home, "tasks"), { recursive: true });
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
  const cancelled = await scifi(home, ["cancel", "t"]);
  expect(cancelled.code, cancelled.out).toBe(0);

  const r = await scifi(home, ["ctl", runId, "resume"]);
  expect(r.out).toContain("cancelled");
  expect(r.code, r.out).toBe(2);
  expect(existsSync(join(dir, "control")) ? readdirSync(join(dir, "control")) : []).toEqual([]);
});
