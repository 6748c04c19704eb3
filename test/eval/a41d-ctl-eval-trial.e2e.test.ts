// Attacker a41d (issue 41, `scifi ctl` on a run it was not meant for), fixed: a person raises the
// limits of an eval trial's run while the eval runs (the trial looked about to hit its budget). Real
// Docker, a real `scifi eval` of one trial, a scripted model (labelled scripted).
//
// Doc promise: docs/eval.md: "eval.json records, per task, the limits its trials run with
// (tasks[].limits, every key), and each trial's run gets exactly those (its state.json holds the
// same)"; every "N/N pass" of a cell compares trials run alike.
// What happened: `scifi ctl <trial run> limits --iterations 9 --budget-usd 7` was accepted (exit 0),
// the run applied it, and neither the trial's result.json nor the eval's summary said so.
// Fixed (the refusal, the simpler and stricter choice: a trial changed by hand is no sample of its
// cell, and recording it would make every statistic count such trials apart): a trial's run records
// who started it (state.json `startedBy`), and ctl refuses `limits` (and `pause`: nobody resumes a
// trial's run) with exit 2, naming the eval and its own knobs; the run refuses a decision file that
// reaches it anyway, on its history (test/run/session/a41d-ctl-started-by.test.ts).
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, cli } from "../attack/a41-run.ts";
import { EXAMPLE, script, workspace } from "../attack/a41d-run.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO, waitFor } from "../run/harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "a41d: ctl of an eval trial's run (docker)",
  { timeout: 180_000 },
  () => {
    it("a limits change of a trial's run is refused, naming the eval and its own knobs", async () => {
      const ws = workspace();
      const suite = join(ws.root, "suite");
      mkdirSync(suite);
      cpSync(join(REPO, "tasks", "examples", EXAMPLE), join(suite, EXAMPLE), { recursive: true });
      // One variant (the example's variants differ from task.md on purpose).
      for (const f of readdirSync(join(suite, EXAMPLE)))
        if (/^task\..+\.md$/.test(f)) rmSync(join(suite, EXAMPLE, f));
      const evalRun = spawn(
        process.execPath,
        [
          CLI,
          "eval",
          suite,
          "--models",
          `scripted:${script({ workSec: 8 })}`,
          "--repeats",
          "1",
          "--concurrency",
          "1",
          "--no-audit",
        ],
        { env: { ...process.env, SCIFI_HOME: ws.home, SCIFI_CTL_POLL_MS: "200" }, stdio: "ignore" },
      );
      const ended = new Promise<number | null>((r) => evalRun.once("exit", (c) => r(c)));
      const runs = join(ws.home, "runs");
      const runId = await waitFor(() => (existsSync(runs) ? readdirSync(runs)[0] : undefined), 120_000);
      await waitFor(() =>
        readFileSync(join(runs, runId, "history.jsonl"), "utf8").includes('"prescan"') ? true : undefined,
      );
      const ctl = await cli(ws.home, ["ctl", runId, "limits", "--iterations", "9", "--budget-usd", "7"]);
      expect(await ended).toBe(0);
      const evals = join(ws.home, "evals");
      const [evalId = ""] = readdirSync(evals);
      const trials = join(evals, evalId, "trials");
      const [trial = ""] = readdirSync(trials);
      const result = readFileSync(join(trials, trial, "result.json"), "utf8");
      expect(ctl.code, `ctl said: ${ctl.stdout}${ctl.stderr}; the trial's result: ${result}`).toBe(2);
      expect(ctl.stderr).toContain(
        `run ${runId} is trial ${trial} of eval ${evalId}: its limits are the eval's plan`,
      );
      expect(ctl.stderr).toContain(`'scifi eval --resume ${evalId} --budget-usd X'`);
      // The trial ran with its plan's limits, as its siblings would.
      const plan = JSON.parse(readFileSync(join(evals, evalId, "eval.json"), "utf8")) as {
        tasks: { limits: { iterations: number; usd: number } }[];
      };
      const state = JSON.parse(readFileSync(join(runs, runId, "state.json"), "utf8")) as {
        limits: { iterations: number; usd: number };
      };
      expect(typeof plan.tasks[0]?.limits.iterations).toBe("number");
      expect(state.limits.iterations).toBe(plan.tasks[0]?.limits.iterations);
      expect(state.limits.usd).toBe(plan.tasks[0]?.limits.usd);
      expect(existsSync(join(runs, runId, "control"))).toBe(false);
    });
  },
);
