// Attack on issue 41's `scifi ctl <run> limits` against replay (docs/models.md "Replay"), found by
// attacker a41 (real Docker, a priced scripted model served from this process: labelled, no real
// LLM); fixed: the replay applies the recorded run's ctl changes before the calls they reached
// (runner/llm/replay-control.ts, RunSession's step event).
// Doc promise: docs/models.md "Replay": "An unchanged task ends with the same verdict, every
// recorded call answered"; docs/loop.md: a replay "sends the same requests (zero divergences)";
// issue 41: "Replay stays exact".
// What happened: a run whose money cap and wall time a person raised mid-run (`scifi ctl <run>
// limits --budget-usd 5 --walltime 2h`, the task itself unchanged) passes; `scifi run <task>
// --model replay:<run>` stops at the first work call after the change with ReplayDivergence at
// `$.request.workspaceContext`: recorded "USD 0.0200 of 5; the run's wall-time limit is 7200 s",
// now "USD 0.0200 of 1; ... 3600 s". The workspace context states the live limits, and the replay
// knows nothing of the decisions (they are on the history, not on the tape), so any run a person
// touched with ctl can never be replayed.
// Suggested fix: record each applied decision on the audit tape (an event before the next call)
// and let a replay apply the recorded run's decisions at the same points (the replay provider
// already walks the tape in order); or mask the limits in the compared workspace context.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readHistory } from "../../../runner/memory/history.ts";
import { cli, pricedTask, readState, startRun } from "../../attack/a41-run.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { ensureImage, fixture, waitFor } from "../harness.ts";

describe.skipIf(!hasEngine("docker"))("a41: replay of a run whose limits a person changed", () => {
  it("answers every recorded call, with the same verdict", async () => {
    ensureImage();
    const { ScriptedServer } = await import("../../../runner/llm/scripted/server.ts");
    const model = await ScriptedServer.start(fixture("ctl-priced.yaml"));
    try {
      const { home, task, models } = pricedTask(model.baseURL);
      const run = await startRun(home, [task, "--models-config", models]);
      // The first work reply takes 15 s: the change lands while it is in flight.
      await waitFor(() => (readState(run.runDir).phase === "prescan" ? true : undefined), 120_000);
      const changed = await cli(home, ["ctl", run.runId, "limits", "--budget-usd", "5", "--walltime", "2h"]);
      expect(changed.code, changed.stderr).toBe(0);
      expect((await run.exit).code, run.out()).toBe(0);

      const replay = await cli(home, ["run", task, "--model", `replay:${run.runId}`]);
      expect(replay.stderr).not.toContain("diverges from the recorded call");
      expect(replay.code, replay.stderr).toBe(0);
      expect(replay.stdout).toContain("PASSED");
      // The replay applied the recorded change itself, through its own control path.
      const replayRun = readdirSync(join(home, "runs")).find((id) => id !== run.runId) ?? "";
      const applied = readHistory(join(home, "runs", replayRun, "history.jsonl")).filter(
        (e) => e.type === "control" && e.action === "limits",
      );
      expect(applied).toMatchObject([{ to: { usd: 5, walltimeSec: 7200 } }]);
      expect(applied[0]?.type === "control" && applied[0].by).toContain("(replayed)");
    } finally {
      await model.close();
    }
  }, 600_000);
});
