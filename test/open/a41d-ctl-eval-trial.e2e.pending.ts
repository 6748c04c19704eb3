// Attacker a41d (issue 41, `scifi ctl` on a run it was not meant for): a person raises the limits of
// an eval trial's run while the eval runs (the trial looked about to hit its budget). Real Docker,
// a real `scifi eval` of one trial, a scripted model (labelled scripted).
//
// Doc promise: docs/eval.md: "eval.json records, per task, the limits its trials run with
// (tasks[].limits, every key), and each trial's run gets exactly those (its state.json holds the
// same)"; every "N/N pass" of a cell compares trials run alike. docs/ctl.md: `<run>` is any run id
// under <home>/runs/ (a trial's run is "an ordinary run under <home>/runs/").
// What happened: `scifi ctl <trial run> limits --iterations 9 --budget-usd 7` is accepted (exit 0,
// "iterations 5 → 9, usd 1 → 7"), the run applies it, and the trial's result.json and the eval's
// summary say nothing of it: a trial that may pass only thanks to four more iterations and seven
// times the money counts in its cell like its siblings.
// Suggested fix: ctl refuses `limits` on an eval trial's run (exit 2, naming the eval and that its
// limits are the plan's: `scifi eval --budget-usd` on resume is the eval's own knob), or the trial's
// result records the change (its control events) and the eval counts the trial apart.
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
    it("a limits change of a trial is refused, or the trial's result says its limits were changed", async () => {
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
          `scripted:${script({ workSec: 20 })}`,
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
      const refused = ctl.code === 2;
      const recorded = /\bctl\b|control|changed/i.test(result);
      expect(
        refused || recorded,
        `ctl said: ${ctl.stdout}${ctl.stderr}(exit ${ctl.code}); the trial's result: ${result}`,
      ).toBe(true);
    });
  },
);
