// Attacker a41d (issue 41, `scifi ctl` from another machine): a run driven on a compute node whose
// clock is 3 hours behind the login node's (no NTP on the node, a VM resumed), `ctl limits` typed on
// the login node, both sharing the run folder.
//
// Doc promise: docs/ctl.md: ctl works "from another shell or from another machine that shares the
// run folder"; a value is refused only when it is "below what the run has already used" ("the wall
// time it has run"). Decisions written with a skewed clock are already handled (their names).
// What happened: ctl adds to the checkpoint's elapsed time `Date.now() - state.spent.at`, comparing
// its own clock with a time stamp the run's host wrote. A run that has run 60 s (its checkpoint
// says so, written a moment ago by the node) is seen as having run 3 h 1 min: `ctl limits
// --walltime 2h` is refused, exit 2, "--walltime 7200 s is below the 10861 s the run has already
// run". (Skewed the other way, ctl accepts a value the run then refuses on its history: documented.)
// Suggested fix: do not mix two hosts' clocks: when the run's lock names another host, leave the
// elapsed check to the run (it re-checks as it applies), or measure the time since the checkpoint
// with the file system's clock (state.json's mtime against a file ctl itself touches there).
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../runner/run/session/limits.ts";
import { REPO } from "../run/harness.ts";

const exec = promisify(execFile);
const HOUR = 3_600_000;

it("a41d: ctl limits --walltime on a run driven by a host whose clock is 3 h behind is not refused", async () => {
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
  const result = await exec(
    process.execPath,
    [join(REPO, "bin/scifi.js"), "ctl", runId, "limits", "--walltime", "2h"],
    { env: { ...process.env, SCIFI_HOME: home } },
  ).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
  expect(result.out).not.toMatch(/already run/);
  expect(result.code, result.out).toBe(0);
  expect(readdirSync(join(dir, "control")).some((n) => n.endsWith("-limits.json"))).toBe(true);
});
