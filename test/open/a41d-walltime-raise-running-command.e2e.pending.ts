// Attacker a41d (issue 41 `ctl limits`, issue 42 item 3 "one clock"): a person raises the wall time
// of a run whose long command (a build) would cross the deadline, the very reason to raise it.
// Real Docker, `scifi run` and `scifi ctl`, a scripted model (labelled scripted).
//
// Doc promise: docs/ctl.md: "The running run applies the change within a second: ... the deadline
// moves (the gateway's wait for a long retry-after, the time every command may still take, the
// abort at the deadline)"; issue 42: "A test shows a limit changed mid-run reaching every consumer".
// What happened (measured): the SAM says `walltime: 40s`; the work runs a 50 s make; 8 s in, `ctl limits
// --walltime 10m` is accepted and applied (history `control`), yet the make is killed at the old
// deadline, ~40 s in ("killed (timeout) The command ran longer than 39.649 s"): the command's timeout was fixed when it started (runner/tools/bash.ts
// timeoutFor: min(asked, bashTimeoutSec, clock.leftMs() at the start)), a copy of the clock that a
// raise does not reach (a lower one does, through the clock's abort). The build the person raised
// the wall time for is lost, and the agent is told its command timed out.
// Suggested fix: a running command's deadline follows the clock: give the exec the clock's signal
// for the wall time and keep only bashTimeoutSec/asked as its own timeout (or re-arm the exec's
// timer on setWalltime).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, startRun } from "../attack/a41-run.ts";
import { script, workspace } from "../attack/a41d-run.ts";
import { hasEngine } from "../helpers/engines.ts";
import { waitFor } from "../run/harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "a41d: a wall time raised under a running command (docker)",
  { timeout: 180_000 },
  () => {
    it("lets the command run past the old deadline", async () => {
      const ws = workspace();
      const sam = join(ws.taskDir, "task.md");
      writeFileSync(sam, readFileSync(sam, "utf8").replace(/^walltime: .*$/m, "walltime: 40s"));
      const run = await startRun(ws.home, [
        ws.taskDir,
        "--model",
        `scripted:${script({ workSec: 50, touch: "build-done.txt" })}`,
        "--backend",
        "docker",
      ]);
      await waitFor(() => (/phase work/.test(run.out()) ? true : undefined), 120_000);
      await new Promise((r) => setTimeout(r, 8_000));
      const ctl = await cli(ws.home, ["ctl", run.runId, "limits", "--walltime", "10m"]);
      expect(ctl.code, ctl.stderr).toBe(0);
      await waitFor(
        () => (/phase checks|phase review|PAUSED|FAILED|PASSED/.test(run.out()) ? true : undefined),
        150_000,
      );
      run.child.kill("SIGTERM");
      await run.exit;
      const history = readFileSync(join(run.runDir, "history.jsonl"), "utf8");
      expect(history, "the change was applied").toMatch(/"type":"control".*"walltimeSec"/);
      expect(
        existsSync(join(ws.taskDir, "build-done.txt")),
        `the 50 s make was cut short:\n${run.out()}`,
      ).toBe(true);
    });
  },
);
