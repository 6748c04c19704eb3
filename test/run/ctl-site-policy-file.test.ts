// `scifi ctl <run> limits` judges a raise against the site policy the run runs under: a run started
// with `--site-policy FILE` records the file (state.json `sitePolicyFile`), and ctl reads that file,
// not the home's (which allowed more here). Before, ctl read only the home's.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../runner/run/session/limits.ts";
import { REPO } from "./harness.ts";

const exec = promisify(execFile);

function ctl(home: string, runId: string, ...args: string[]) {
  return exec(process.execPath, [join(REPO, "bin/scifi.js"), "ctl", runId, "limits", ...args], {
    env: { ...process.env, SCIFI_HOME: home },
  }).then(
    (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
}

function pausedRun(home: string, runId: string, sitePolicyFile?: string): string {
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
      limits: { ...DEFAULT_LIMITS, walltimeSec: 1800 },
      resumes: 0,
      paused: { at: "2026-12-04T03:00:00.000Z", phase: "work", reason: "paused by x@y" },
      ...(sitePolicyFile ? { sitePolicyFile } : {}),
    }),
  );
  return dir;
}

it("refuses a wall time past the maxWalltime of the run's own --site-policy file, naming it", async () => {
  const root = mkdtempSync(join(tmpdir(), "scifi-ctl-site-"));
  const home = join(root, "home");
  mkdirSync(home);
  writeFileSync(join(home, "site-policy.yaml"), "maxWalltime: 10h\n");
  const strict = join(root, "cluster-policy.yaml");
  writeFileSync(strict, "maxWalltime: 1h\n");
  const runId = "20261204-030000-t-bbbbbb";
  const dir = pausedRun(home, runId, strict);
  const refused = await ctl(home, runId, "--walltime", "2h");
  expect(refused.code, refused.out).toBe(2);
  expect(refused.out).toContain("maxWalltime (3600 s");
  expect(refused.out).toContain(strict);
  expect(existsSync(join(dir, "control")) ? readdirSync(join(dir, "control")) : []).toEqual([]);
  // Within that file's limit: taken.
  const ok = await ctl(home, runId, "--walltime", "50m");
  expect(ok.code, ok.out).toBe(0);

  // A run without a file of its own is judged by the home's policy, which allows 2 h.
  const other = "20261204-030000-t-cccccc";
  pausedRun(home, other);
  const homeOk = await ctl(home, other, "--walltime", "2h");
  expect(homeOk.code, homeOk.out).toBe(0);
});
