// A running command follows the run's clock (a41d-walltime-raise-running-command): the bash tool
// gives the sandbox exec the run's stop signal for the wall time and only the bash limit as the
// command's own timeout, so a deadline moved while the command runs (`scifi ctl <run> limits
// --walltime`) moves its end too. Shared by the Docker tool suite (test/tools/sandbox.e2e.test.ts)
// and the Apptainer harness (test/sandbox/apptainer/a41d-clock-follow.inner.ts): one exec path each.
import { expect, it } from "vitest";
import { DEFAULT_LIMITS, RunClock, RunStop } from "../../runner/run/session/limits.ts";
import type { Sandbox } from "../../runner/sandbox/types.ts";
import { runTool, workTools } from "../../runner/tools/registry.ts";

/** A started clock of `walltimeSec` and the stop the bash tool listens to. */
function runClock(walltimeSec: number): { clock: RunClock; stop: RunStop } {
  const clock = new RunClock({ ...DEFAULT_LIMITS, walltimeSec });
  clock.start();
  return { clock, stop: new RunStop(clock) };
}

function bash(sandbox: () => Sandbox, command: string, signal: AbortSignal) {
  return runTool(
    workTools,
    "bash",
    { command },
    { sandbox: sandbox(), bashTimeoutMs: 60_000, maxOutputChars: 4000, signal },
  );
}

export function commandFollowsClock(sandbox: () => Sandbox): void {
  it("a wall time raised while a command runs lets it run past the old deadline", async () => {
    const { clock, stop } = runClock(2);
    const raise = setTimeout(() => clock.setWalltime(120), 500);
    try {
      const out = await bash(sandbox, "sleep 4 && echo finished", stop.signal);
      expect(out.output).toContain("finished");
      expect(out.ok, out.output).toBe(true);
      expect(stop.signal.aborted).toBe(false);
    } finally {
      clearTimeout(raise);
      clock.stop();
    }
  });

  it("a wall time lowered while a command runs kills it at the new deadline, saying why", async () => {
    const { clock, stop } = runClock(120);
    const started = Date.now();
    const lower = setTimeout(() => clock.setWalltime(Math.ceil(clock.elapsedMs() / 1000) + 1), 500);
    try {
      const out = await bash(sandbox, "sleep 30; echo finished", stop.signal);
      expect(out.ok).toBe(false);
      expect(out.output).not.toContain("finished");
      expect(out.output).toContain("killed (the run stopped)");
      expect(out.output).toMatch(/the run stopped: wall time limit reached \(\d+ s\)/);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      clearTimeout(lower);
      clock.stop();
    }
  });
}
