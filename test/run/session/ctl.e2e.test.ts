// `scifi ctl <run>` on a direct `scifi run` in progress (real Docker, a priced scripted model served
// through a models config: labelled, no real LLM): limits raised and lowered (never below what is
// spent or used: refused by name), a pause taken at the next phase boundary (the process exits 5,
// its sandbox gone), and `scifi ctl <run> resume` continuing it in a new process to a pass. The
// decisions are on the history and in the report; the run folder is never mounted into a sandbox.

import { execFile, execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spentOnTape } from "../../../runner/audit/spent.ts";
import type { ScriptedServer } from "../../../runner/llm/scripted/server.ts";
import { readHistory } from "../../../runner/memory/history.ts";
import type { RunState } from "../../../runner/run-folder/state.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { ensureImage, fixture, REPO, waitFor } from "../harness.ts";
import { pricedTask } from "./priced-task.ts";

const CLI = join(REPO, "bin", "scifi.js");
const exec = promisify(execFile);
let server: ScriptedServer | undefined;

/** The CLI, asynchronously: the scripted server lives in this process and must keep answering. */
async function cli(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(process.execPath, [CLI, ...args], {
    env: { ...process.env, SCIFI_HOME: home, SCIFI_CTL_POLL_MS: "200" },
    timeout: 300_000,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}

/** Containers of a run (its phase sandboxes carry the run id in their `scifi.run` label). */
function containersOf(runId: string): string[] {
  const out = execFileSync(
    "docker",
    ["ps", "-a", "--filter", "label=scifi=1", "--format", '{{.ID}} {{.Label "scifi.run"}}'],
    { encoding: "utf8" },
  );
  return out
    .split("\n")
    .filter((l) => (l.split(" ")[1] ?? "").startsWith(runId))
    .map((l) => l.split(" ")[0] ?? "");
}

function readState(runDir: string): RunState {
  return JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as RunState;
}

describe.skipIf(!hasEngine("docker"))("scifi ctl on a direct run (docker, scripted model)", () => {
  beforeAll(async () => {
    ensureImage();
    const { ScriptedServer } = await import("../../../runner/llm/scripted/server.ts");
    server = await ScriptedServer.start(fixture("ctl-priced.yaml"));
  }, 1_800_000);
  afterAll(async () => {
    await server?.close();
  });

  it("raises and lowers limits, refuses one below what is used, pauses at a boundary and resumes to a pass", async () => {
    const { home, task, models } = pricedTask(server?.baseURL ?? "");
    const first = spawn(process.execPath, [CLI, "run", task, "--models-config", models], {
      env: { ...process.env, SCIFI_HOME: home, SCIFI_CTL_POLL_MS: "200" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let firstOut = "";
    first.stdout?.on("data", (d: Buffer) => {
      firstOut += d.toString();
    });
    const firstExit = new Promise<number | null>((r) => first.once("exit", (code) => r(code)));
    const runDir = await waitFor(() => {
      const runs = existsSync(join(home, "runs")) ? readdirSync(join(home, "runs")) : [];
      return runs[0] ? join(home, "runs", runs[0]) : undefined;
    });
    const runId = runDir.split("/").at(-1) ?? "";
    // The pre-scan is checkpointed (USD 0.01 spent); the first work reply takes 15 s.
    // state.json is written just after the run folder is made: wait for it as for the phase.
    await waitFor(
      () =>
        existsSync(join(runDir, "state.json")) && readState(runDir).phase === "prescan" ? true : undefined,
      120_000,
    );
    expect(spentOnTape(join(runDir, "audit.jsonl")).usd).toBeCloseTo(0.01, 9);

    // Below what is spent or used: refused, precisely, and nothing is written for the run.
    const poor = await cli(home, ["ctl", runId, "limits", "--budget-usd", "0.005"]);
    expect(poor.code).toBe(2);
    expect(poor.stderr).toContain(
      `scifi ctl: run ${runId}: --budget-usd 0.005 is below the USD 0.0100 already spent`,
    );
    await new Promise((r) => setTimeout(r, 1100));
    const short = await cli(home, ["ctl", runId, "limits", "--walltime", "1s"]);
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/--walltime 1 s is below the \d+ s the run has already run/);
    expect(existsSync(join(runDir, "control")) ? readdirSync(join(runDir, "control")) : []).toEqual([]);

    // Raised, then lowered (above what is spent): each applied by the running run at once.
    const raised = await cli(home, [
      "ctl",
      runId,
      "limits",
      "--budget-usd",
      "5",
      "--iterations",
      "4",
      "--walltime",
      "2h",
    ]);
    expect(raised.code, raised.stderr).toBe(0);
    expect(raised.stdout).toContain("usd 1 → 5");
    const lowered = await cli(home, ["ctl", runId, "limits", "--budget-usd", "0.5"]);
    expect(lowered.code, lowered.stderr).toBe(0);
    const controls = () => readHistory(join(runDir, "history.jsonl")).filter((e) => e.type === "control");
    await waitFor(() => (controls().length >= 2 ? true : undefined), 30_000);
    expect(controls()).toMatchObject([
      {
        action: "limits",
        from: { usd: 1, iterations: 2, walltimeSec: 3600 },
        to: { usd: 5, iterations: 4, walltimeSec: 7200 },
      },
      { action: "limits", from: { usd: 5 }, to: { usd: 0.5 } },
    ]);

    // The run folder (the control files with it) is never mounted into the agent's sandbox.
    const sandboxes = containersOf(runId);
    expect(sandboxes.length).toBeGreaterThan(0);
    for (const id of sandboxes) {
      const mounts = JSON.parse(
        execFileSync("docker", ["inspect", "--format", "{{json .Mounts}}", id], { encoding: "utf8" }),
      ) as { Source: string }[];
      for (const m of mounts) expect(m.Source.startsWith(home)).toBe(false);
    }

    // Pause: taken after the work phase; the process exits 5 with its sandbox gone.
    const pause = await cli(home, ["ctl", runId, "pause", "--wait"]);
    expect(pause.code, pause.stderr).toBe(0);
    expect(pause.stdout).toContain(`run ${runId}: paused after phase work`);
    expect(await firstExit).toBe(5);
    expect(firstOut).toContain("PAUSED after phase work");
    expect(firstOut).toContain(`scifi ctl ${runId} resume`);
    const paused = readState(runDir);
    expect(paused.paused).toMatchObject({ phase: "work" });
    expect(paused.outcome).toBeUndefined();
    expect(paused.limits).toMatchObject({ usd: 0.5, iterations: 4, walltimeSec: 7200 });
    expect(containersOf(runId)).toEqual([]);
    expect(await cli(home, ["ctl", runId, "pause"])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`run ${runId} is already paused`),
    });

    // Resume (a new process: the runner that paused is gone): it continues from the work checkpoint.
    const resumed = await cli(home, ["ctl", runId, "resume"]);
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0);
    expect(resumed.stdout).toContain("PASSED");
    const ended = readState(runDir);
    expect(ended.outcome?.status).toBe("passed");
    expect(ended.paused).toBeUndefined();
    expect(ended.resumes).toBe(1);
    expect(ended.spent.usd).toBeLessThanOrEqual(0.5);
    expect(controls().map((e) => (e.type === "control" ? e.action : ""))).toEqual([
      "limits",
      "limits",
      "pause",
      "paused",
      "resume",
    ]);
    const report = readFileSync(join(runDir, "report.html"), "utf8");
    expect(report).toContain("Limits changed");
    expect(report).toContain("Paused after phase work");

    // Ended or unknown: refused by name (exit 2).
    expect(await cli(home, ["ctl", runId, "limits", "--iterations", "9"])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(`run ${runId} already ended (passed`),
    });
    expect(await cli(home, ["ctl", "no-such-run", "pause"])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("no run 'no-such-run' under"),
    });
  }, 600_000);
});
