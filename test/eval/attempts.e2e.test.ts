// What an eval keeps of each trial's runs (runner/eval/attempts.ts, task-files.ts), in real Docker
// sandboxes with scripted models (labelled scripted):
// - a run that ended before a kill took the eval, with no result.json yet, is kept on resume (its
//   result made from the run's records), never run again;
// - an attempt a kill cut short is listed under the trial's `earlier` when the trial is run again;
// - a task folder changed while an eval runs makes the next trial an `error` naming the file;
// - an eval stopped by its budget resumes with a larger `--budget-usd`.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { readAttempts } from "../../runner/eval/attempts.ts";
import { driveEval, resumeEval, runEval } from "../../runner/eval/engine.ts";
import { evalFiles, type PlannedTrial, readPlan } from "../../runner/eval/plan.ts";
import { readResults } from "../../runner/eval/summary-files.ts";
import { attemptOwner } from "../../runner/eval/trial.ts";
import type { RunState } from "../../runner/run-folder/state.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { CLI, evalWorkspace, RETRY } from "./eval-workspace.ts";

const exec = promisify(execFile);

const runs = (home: string) => readdirSync(join(home, "runs")).filter((r) => r !== "index.html");

describe.skipIf(!hasEngine("docker"))("scifi eval: every run of a trial accounted for", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("a run that ended without its result.json is kept on resume; a cut-short one is listed as earlier", async () => {
    const { root, home } = evalWorkspace("recover");
    const models = [`scripted:${join(root, "models", "pass.yaml")}`];
    const first = await runEval({ home, suite: join(root, "suite"), models, repeats: 2, retry: RETRY });
    expect(first.summary.trials).toMatchObject({ pass: 4, pending: 0 });
    const plan = readPlan(first.evalDir);
    const [kept, cut] = plan.trials.map((t) => t.trialId);
    const before = readResults(first.evalDir, plan);
    const keptRun = before.get(kept as string)?.runId as string;
    const cutRun = before.get(cut as string)?.runId as string;
    // `kept`: killed after its run's end, before its record. `cut`: killed while its run ran (no outcome).
    rmSync(evalFiles(first.evalDir).result(kept as string));
    rmSync(evalFiles(first.evalDir).result(cut as string));
    const stateFile = join(home, "runs", cutRun, "state.json");
    const state = JSON.parse(readFileSync(stateFile, "utf8")) as RunState;
    delete state.outcome;
    writeFileSync(stateFile, JSON.stringify(state));

    const again = await resumeEval({ home, evalId: plan.evalId, retry: RETRY });
    expect(again.summary.trials).toMatchObject({ pass: 4, pending: 0 });
    const after = readResults(first.evalDir, plan);
    // Kept: the same run, no new one started for it.
    expect(after.get(kept as string)).toMatchObject({ runId: keptRun, status: "pass", verdict: "PASSED" });
    expect(after.get(kept as string)?.earlier).toBeUndefined();
    const keptTrial = plan.trials[0] as PlannedTrial;
    const owner = attemptOwner(home, first.evalDir, keptTrial);
    expect(readAttempts(first.evalDir, kept as string, owner).map((a) => a.runId)).toEqual([keptRun]);
    // Cut short: run again, and the cut-short attempt is named.
    const redone = after.get(cut as string);
    expect(redone?.runId).not.toBe(cutRun);
    expect(redone?.earlier).toEqual([
      { runId: cutRun, usd: 0, ending: "interrupted", cause: "the eval was stopped while this attempt ran" },
    ]);
    expect(runs(home)).toHaveLength(5);
  }, 600_000);

  it("a task folder changed while the eval runs: the next trial is an error naming the file", async () => {
    const { root, home } = evalWorkspace("changed");
    const models = [`scripted:${join(root, "models", "pass.yaml")}`];
    const first = await runEval({ home, suite: join(root, "suite"), models, repeats: 1, retry: RETRY });
    const plan = readPlan(first.evalDir);
    const trial = plan.trials[0]?.trialId as string;
    rmSync(evalFiles(first.evalDir).result(trial));
    rmSync(join(evalFiles(first.evalDir).trial(trial), "attempts.jsonl"));
    // As if the folder changed after the resume's own check (driven without it): the trial's copy
    // is compared with the plan, which had an extra.dat the folder no longer holds.
    const task = plan.tasks[0];
    const edited = {
      ...plan,
      tasks: plan.tasks.map((t) => ({ ...t, files: { ...t.files, "extra.dat": "file 00" } })),
    };
    const again = await driveEval({ home, evalDir: first.evalDir, plan: edited, retry: RETRY });
    const result = readResults(first.evalDir, plan).get(trial);
    expect(result?.status).toBe("error");
    expect(result?.cause).toContain(
      `the task folder ${task?.dir} changed since the eval started: extra.dat is gone`,
    );
    expect(again.summary.trials.error).toBe(1);
  }, 600_000);

  it("a budget stop resumes with a larger --budget-usd (and a live eval's plan is never changed)", async () => {
    const { root, home } = evalWorkspace("budget");
    const env = { ...process.env, SCIFI_HOME: home };
    const models = `scripted:${join(root, "models", "pass.yaml")}`;
    const stopped = await exec(
      process.execPath,
      [CLI, "eval", join(root, "suite"), "--models", models, "--budget-usd", "0", "--concurrency", "1"],
      { env, timeout: 300_000 },
    ).catch((e: { stdout: string; stderr: string; code: number }) => e);
    expect("code" in stopped ? stopped.code : 0).toBe(1);
    const evalId = readdirSync(join(home, "evals"))[0] as string;
    expect(stopped.stderr).toContain(`scifi eval --resume ${evalId} --budget-usd`);
    // Budget 0 is spent before the first trial (0 >= 0): nothing ran.
    expect(existsSync(join(home, "runs")) ? runs(home) : []).toHaveLength(0);
    const resumed = await exec(process.execPath, [CLI, "eval", "--resume", evalId, "--budget-usd", "5"], {
      env,
      timeout: 300_000,
    });
    expect(resumed.stdout).toMatch(/: 2 pass, 0 fail, 0 error, 0 pending of 2;/);
    expect(readPlan(join(home, "evals", evalId)).budgetUsd).toBe(5);
  }, 600_000);
});
