// `scifi ctl <run> pause|resume` on a daemon task (real `scifi daemon` processes, real Docker, the
// scripted model: labelled, no real LLM). A paused task frees its slot (the next task runs), stays
// paused across a daemon killed with SIGKILL and a new one, and `resume` requeues it: it continues
// its run from the pause's checkpoint to a pass.
import { readFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { readHistory } from "../../runner/memory/history.ts";
import { runDir, runFiles } from "../../runner/paths.ts";
import type { RunState } from "../../runner/run-folder/state.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import {
  containersOf,
  dropFolder,
  events,
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

describe.skipIf(!hasEngine("docker"))("scifi ctl on a daemon task (docker, scripted model)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("a paused task frees its slot, survives a daemon restart and resumes to a pass", async () => {
    const h = makeHome();
    let daemon = startDaemon(h, ["--concurrency", "1"]);
    started.push(daemon);
    // `slow`: the work pass's command sleeps 6 s, so the pause is asked while the run is in its work.
    dropFolder(h, "a", fixtureText("trivial.md", "ctl-a"), { slow: true });
    const runId = await runningRunId(h, "a");
    // Queued behind a (one slot).
    dropFolder(h, "b", fixtureText("trivial.md", "ctl-b"));

    const pause = scifi(h, ["ctl", runId, "pause", "--wait"]);
    expect(pause.code, pause.stderr).toBe(0);
    expect(pause.stdout).toMatch(new RegExp(`run ${runId}: paused after phase \\w+`));
    await waitFor("task a paused", () => tasksByKey(h).get("a")?.state === "paused");
    // Its slot is free: b runs and passes while a waits, with no sandbox of a's left.
    await waitFor("task b passed", () => tasksByKey(h).get("b")?.state === "passed", 240_000);
    expect(tasksByKey(h).get("a")).toMatchObject({ state: "paused" });
    expect(tasksByKey(h).get("a")?.reason).toContain(`scifi ctl ${runId} resume`);
    expect(containersOf([runId])).toEqual([]);
    expect(events(daemon.log()).some((e) => e.event === "paused" && e.task === "a")).toBe(true);

    // The daemon dies (SIGKILL) while a is paused; a new daemon leaves it paused.
    daemon.child.kill("SIGKILL");
    await daemon.exited;
    daemon = startDaemon(h, ["--concurrency", "1"]);
    started.push(daemon);
    await new Promise((r) => setTimeout(r, 3000));
    expect(tasksByKey(h).get("a")?.state).toBe("paused");
    expect(scifi(h, ["ctl", runId, "pause"])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`run ${runId} is already paused`),
    });

    // By the task's name this time: a daemon task names its last attempt's run.
    const resume = scifi(h, ["ctl", "a", "resume"]);
    expect(resume.code, resume.stderr).toBe(0);
    expect(resume.stdout).toContain(`run ${runId}: task a `);
    await waitFor("task a passed", () => tasksByKey(h).get("a")?.state === "passed", 240_000);
    const task = tasksByKey(h).get("a");
    // The same attempt and run, continued: not started again.
    expect(task?.attempts).toHaveLength(1);
    expect(task?.attempts[0]).toMatchObject({ runId, resumes: 1 });
    const state = JSON.parse(readFileSync(runFiles(runDir(h.home, runId)).state, "utf8")) as RunState;
    expect(state).toMatchObject({ phase: "ended", resumes: 1, outcome: { status: "passed" } });
    expect(state.paused).toBeUndefined();
    const actions = readHistory(runFiles(runDir(h.home, runId)).history).flatMap((e) =>
      e.type === "control" ? [e.action] : [],
    );
    expect(actions).toEqual(["pause", "paused", "resume"]);
    expect(events(daemon.log()).some((e) => e.event === "resume_requested" && e.task === "a")).toBe(true);
  }, 600_000);
});
