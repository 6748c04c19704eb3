// Attacks on issue 41's `scifi ctl` on live runs that held (attacker a41; real Docker, a priced
// scripted model served from this process: labelled, no real LLM): three processes resuming one
// paused run at once, and SIGTERM to `scifi run` while a pause it was asked for is still pending.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readHistory } from "../../runner/memory/history.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, waitFor } from "../loop/harness.ts";
import { CLI, cli, containersOf, pricedTask, readState, startRun } from "./a41-run.ts";

async function server() {
  const { ScriptedServer } = await import("../../runner/llm/scripted/server.ts");
  return ScriptedServer.start(fixture("ctl-priced.yaml"));
}

describe.skipIf(!hasEngine("docker"))("a41 held: ctl on live runs (docker, scripted model)", () => {
  it("two `ctl resume` and a `scifi run --resume` of one paused run: one drives it, once", async () => {
    ensureImage();
    const model = await server();
    try {
      const { home, task, models } = pricedTask(model.baseURL);
      const run = await startRun(home, [task, "--models-config", models]);
      await waitFor(() => (readState(run.runDir).phase === "prescan" ? true : undefined), 120_000);
      const pause = await cli(home, ["ctl", run.runId, "pause", "--wait"]);
      expect(pause.code, pause.stderr).toBe(0);
      expect((await run.exit).code).toBe(5);

      const all = await Promise.all([
        cli(home, ["ctl", run.runId, "resume"]),
        cli(home, ["ctl", run.runId, "resume"]),
        cli(home, ["run", "--resume", run.runId, "--models-config", models]),
      ]);
      const winners = all.filter((r) => r.code === 0);
      expect(winners, JSON.stringify(all.map((r) => [r.code, r.stderr.slice(-300)]))).toHaveLength(1);
      expect(winners[0]?.stdout).toContain("PASSED");
      // The others were refused by name, not half-run.
      for (const r of all.filter((x) => x.code !== 0))
        expect(r.stderr).toMatch(
          /being driven by another scifi process|still holds it|is not paused|already ended/,
        );
      const state = readState(run.runDir);
      expect(state.outcome?.status).toBe("passed");
      expect(state.resumes).toBe(1);
      const history = readHistory(join(run.runDir, "history.jsonl"));
      expect(history.filter((e) => e.type === "run_end")).toHaveLength(1);
      expect(history.filter((e) => e.type === "resumed")).toHaveLength(1);
      expect(containersOf(run.runId)).toEqual([]);
    } finally {
      await model.close();
    }
  }, 600_000);

  it("SIGTERM while a pause is pending: exit 143, sandbox gone, resumable; the pause is taken on resume", async () => {
    ensureImage();
    const model = await server();
    try {
      const { home, task, models } = pricedTask(model.baseURL);
      const run = await startRun(home, [task, "--models-config", models]);
      await waitFor(() => (readState(run.runDir).phase === "prescan" ? true : undefined), 120_000);
      // The work reply takes 15 s: the pause waits for the phase's end; the signal does not.
      const pause = await cli(home, ["ctl", run.runId, "pause"]);
      expect(pause.code, pause.stderr).toBe(0);
      await waitFor(() => (containersOf(run.runId).length > 0 ? true : undefined), 60_000);
      run.child.kill("SIGTERM");
      const exit = await run.exit;
      expect(exit.code, run.out()).toBe(143);
      expect(containersOf(run.runId)).toEqual([]);
      const state = readState(run.runDir);
      expect(state.paused).toBeUndefined();
      expect(state.outcome).toBeUndefined();
      // The pause was asked and never taken: the resumed run takes it at its first boundary.
      const resumed = await cli(home, ["run", "--resume", run.runId, "--models-config", models]);
      expect(resumed.code, resumed.stderr).toBe(5);
      expect(resumed.stdout).toContain("PAUSED after phase prescan");
      expect(readState(run.runDir).paused).toMatchObject({ phase: "prescan" });
      expect(containersOf(run.runId)).toEqual([]);
      execFileSync(process.execPath, [CLI, "status"], { env: { ...process.env, SCIFI_HOME: home } });
    } finally {
      await model.close();
    }
  }, 600_000);
});
