// Attacker a41d (issue 41 `ctl limits`, issue 42 item 3 "one clock"), fixed: a person raises the
// wall time of a run whose long command (a build) would cross the deadline, the very reason to raise
// it. Real Docker, `scifi run` and `scifi ctl`, a scripted model (labelled scripted).
//
// Doc promise: docs/ctl.md: "The running run applies the change within a second: ... the deadline
// moves (... the time every command may still take, a command already running included, the abort
// at the deadline)"; issue 42: "A test shows a limit changed mid-run reaching every consumer".
// What happened: the SAM said `walltime: 40s`; the work ran a 50 s make; 8 s in, `ctl limits
// --walltime 10m` was applied, yet the make was killed at the old deadline: runner/tools/bash.ts
// fixed the command's timeout at its start from clock.leftMs(), a copy a raise does not reach.
// Fixed: the command's own timeout is only what it asked and bashTimeoutSec; the wall time reaches
// it through the run's stop signal (the clock's abort at the deadline as it stands), on Docker and
// Apptainer alike (test/tools/clock-follow.ts runs that on both backends). Here, shortened: a
// 25 s wall time, a 30 s make, the raise 3 s into the work.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, startRun } from "../../attack/a41-run.ts";
import { script, workspace } from "../../attack/a41d-run.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { waitFor } from "../harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "a41d: a wall time raised under a running command (docker)",
  { timeout: 180_000 },
  () => {
    it("lets the command run past the old deadline", async () => {
      const ws = workspace();
      const sam = join(ws.taskDir, "task.md");
      writeFileSync(sam, readFileSync(sam, "utf8").replace(/^walltime: .*$/m, "walltime: 25s"));
      const run = await startRun(ws.home, [
        ws.taskDir,
        "--model",
        `scripted:${script({ workSec: 30, touch: "build-done.txt" })}`,
        "--backend",
        "docker",
      ]);
      await waitFor(() => (/phase work/.test(run.out()) ? true : undefined), 120_000);
      await new Promise((r) => setTimeout(r, 3_000));
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
        `the 30 s make was cut short:\n${run.out()}`,
      ).toBe(true);
    });
  },
);
