// Attacker a41d (issue 41, `scifi ctl` from another machine), fixed: a run driven on a compute node
// whose clock is 3 hours behind the login node's (no NTP on the node, a VM resumed), `ctl limits`
// typed on the login node, both sharing the run folder.
//
// Doc promise: docs/ctl.md: ctl works "from another shell or from another machine that shares the
// run folder"; a value is refused only when it is "below what the run has already used".
// What happened: ctl added to the checkpoint's elapsed time `Date.now() - state.spent.at`, comparing
// its own clock with a time stamp the run's host wrote: a run that had run 60 s was seen as having
// run 3 h 1 min and `ctl limits --walltime 2h` was refused, exit 2.
// Fixed (runner/cli/commands/ctl.ts): when the run's lock names another host, ctl checks only the
// checkpoint's own elapsed time (measured on the run's host) and leaves the rest to the run, which
// checks the figures again as it applies the decision (a refusal there is on its history); ctl says so.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../../runner/run/session/limits.ts";
import { REPO } from "../harness.ts";

const exec = promisify(execFile);
const HOUR = 3_600_000;

/** A run folder whose checkpoint (60 s run) and lock were written by node-b, whose clock is 3 h behind. */
function skewedRun(): { home: string; runId: string; dir: string } {
  const home = join(mkdtempSync(join(tmpdir(), "a41d-skew-")), "home");
  const runId = "20261204-100000-skew-aaaaaa";
  const dir = join(home, "runs", runId);
  mkdirSync(dir, { recursive: true });
  const nodeNow = Date.now() - 3 * HOUR; // the compute node's clock
  writeFileSync(
    join(dir, "state.json"),
    JSON.stringify({
      version: 1,
      runId,
      phase: "work",
      iteration: 1,
      attempts: { root: 1 },
      // Checkpointed just now by the node: 60 s run so far.
      spent: { tokens: 0, usd: 0, elapsedMs: 60_000, at: new Date(nodeNow).toISOString() },
      limits: { ...DEFAULT_LIMITS, walltimeSec: 3600 },
      resumes: 0,
    }),
  );
  // The run's lock, held by a process on the compute node (another host: the run counts as driven).
  writeFileSync(
    join(dir, "run.lock"),
    JSON.stringify({
      pid: 4242,
      host: "node-b",
      startedAt: new Date(nodeNow - 60_000).toISOString(),
      procStart: "1",
      runId,
    }),
  );
  return { home, runId, dir };
}

async function ctl(home: string, args: string[]): Promise<{ code: number; out: string }> {
  return exec(process.execPath, [join(REPO, "bin/scifi.js"), "ctl", ...args], {
    env: { ...process.env, SCIFI_HOME: home },
  }).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
}

it("a41d: ctl limits --walltime on a run driven by a host whose clock is 3 h behind is not refused", async () => {
  const { home, runId, dir } = skewedRun();
  const result = await ctl(home, [runId, "limits", "--walltime", "2h"]);
  expect(result.out).not.toMatch(/already run/);
  expect(result.out).toMatch(/runs on node-b, whose clock is not this host's: the run checks/);
  expect(result.code, result.out).toBe(0);
  expect(readdirSync(join(dir, "control")).some((n) => n.endsWith("-limits.json"))).toBe(true);
});

it("a41d: below the checkpoint's own time (measured on the run's host) is still refused there", async () => {
  const { home, runId, dir } = skewedRun();
  const result = await ctl(home, [runId, "limits", "--walltime", "30s"]);
  expect(result.code, result.out).toBe(2);
  expect(result.out).toMatch(/--walltime 30 s is below the 60 s the run has already run/);
  expect(existsSync(join(dir, "control"))).toBe(false);
});
