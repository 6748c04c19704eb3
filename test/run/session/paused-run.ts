// A paused run's folder as `scifi ctl` finds it (state.json only), a daemon task holding it, and the
// CLI run as a person would: shared by the ctl tests that need a run but not its loop.
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { writeTask } from "../../../runner/daemon/records.ts";
import { DEFAULT_LIMITS } from "../../../runner/run/session/limits.ts";
import type { RunState } from "../../../runner/run-folder/state.ts";
import { REPO } from "../harness.ts";

const exec = promisify(execFile);

/** Writes `<home>/runs/<runId>/state.json` of a run paused in its first work phase; its folder. */
export function writePausedRun(home: string, runId: string, state: Partial<RunState> = {}): string {
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
      spent: { tokens: 0, usd: 0, elapsedMs: 60_000, at: new Date().toISOString() },
      limits: { ...DEFAULT_LIMITS },
      resumes: 0,
      paused: { at: "2026-12-04T03:00:00.000Z", phase: "work", reason: "paused by x@y" },
      ...state,
    }),
  );
  return dir;
}

/** The daemon's record of task `t`, paused, whose one attempt is run `runId` (budget 1 USD). */
export function writePausedDaemonTask(home: string, runId: string): void {
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
}

/** `scifi ARGS` with SCIFI_HOME=home: its exit code and its stdout and stderr together. */
export function scifi(home: string, args: string[]): Promise<{ code: number; out: string }> {
  return exec(process.execPath, [join(REPO, "bin/scifi.js"), ...args], {
    env: { ...process.env, SCIFI_HOME: home },
  }).then(
    (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
}
