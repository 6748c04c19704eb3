// Attack on issue 41's pause of a daemon task (runner/cli/commands/ctl.ts, runner/daemon/), found
// by attacker a41 (real `scifi daemon`, real Docker, the scripted model: labelled, no real LLM).
// Failed before fix-41a (now passes).
// Doc promise: docs/ctl.md: a paused daemon task "shows `paused` in `scifi status`"; `resume`
// "continues a paused run"; "`scifi run --resume <run>` ... also continues a paused run"; daemon.md:
// `running -> paused -> queued` when a person resumes it.
// What happened: with the daemon running, a person continues the paused task's run with
// `scifi run --resume <run>` (the form ctl.md gives for direct runs). It is not refused: it drives
// the run to its end (passed), outside the daemon. The task's record stays `paused` for good, its
// reason still saying "continue it with 'scifi ctl <run> resume'", which now refuses ("run ...
// already ended (passed ...)"): `scifi status` shows a finished task as paused forever, and its
// onFinish hook (if any) never runs.
// Suggested fix: refuse `scifi run --resume` of a run that belongs to a daemon task (the task
// record names it), pointing at `scifi ctl <run> resume`; or let the daemon reconcile a paused
// task whose run has ended (its outcome becomes the task's).
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { runDir } from "../../runner/paths.ts";
import { readState } from "../attack/a41-run.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import {
  dropFolder,
  fixtureText,
  makeHome,
  type RunningDaemon,
  runningRunId,
  scifi,
  startDaemon,
  stopDaemons,
  tasksByKey,
  waitFor,
} from "./harness.ts";

const started: RunningDaemon[] = [];
afterEach(() => stopDaemons(started));

describe.skipIf(!hasEngine("docker"))("a41: a paused daemon task's run resumed directly", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("is refused (exit 2, naming scifi ctl <task> resume); ctl resume then takes it to a pass", async () => {
    const h = makeHome();
    const daemon = startDaemon(h, ["--concurrency", "1"]);
    started.push(daemon);
    dropFolder(h, "a", fixtureText("trivial.md", "a41-a"), { slow: true });
    const runId = await runningRunId(h, "a");
    const pause = scifi(h, ["ctl", runId, "pause", "--wait"]);
    expect(pause.code, pause.stderr).toBe(0);
    await waitFor("task a paused", () => tasksByKey(h).get("a")?.state === "paused");

    const direct = scifi(h, ["run", "--resume", runId]);
    const dir = runDir(h.home, runId);
    const state = readState(dir);
    // Refused (fix-41a): the daemon owns the task's run; the message names the way that does resume it.
    expect(direct.code, direct.stderr).toBe(2);
    expect(direct.stderr).toContain("scifi ctl a resume");
    expect(state.paused).toBeDefined();
    expect(state.outcome).toBeUndefined();
    expect(scifi(h, ["ctl", "a", "resume"]).code).toBe(0);
    await waitFor("task a passed", () => tasksByKey(h).get("a")?.state === "passed", 240_000);
  }, 600_000);
});
