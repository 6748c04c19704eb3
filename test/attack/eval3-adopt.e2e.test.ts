// Attacks on what `scifi eval --resume` keeps of a trial's runs (attacker session eval3; from
// docs/eval.md "Durability and resume" and "Trials and the eval folder").
// 1. Promise: "A run that ended is kept. ... the resume makes the trial's result from that run's
//    records (the trial's last line in attempts.jsonl)", and "a result counts once (results are
//    keyed by trial id ...)"; every "N/N pass" can be traced to N runs.
//    Done: an eval of one task with two scripted models, `pass` and `never` (one trial each: pass
//    and fail). The failed trial's result.json is removed (a kill between its run's end and its
//    record) and its attempts.jsonl gets, as its last line, the line of the *other* trial's run (a
//    stale file: an eval folder restored from a backup, a trial folder copied by hand).
//    Happened: the resume adopts the other trial's run without looking at whose run it is (its
//    state's task folder is another trial's copy, another model): the `never` trial becomes
//    `pass`, with the same runId as the `pass` trial: one run counted twice, a fail turned pass.
// 2. Promise: "One process drives an eval. The driver holds eval.lock ... A second ... of a live eval
//    is refused ... before it touches a trial", and a resume "runs exactly the trials without a
//    result". Done: with eval.lock held by a live process, `scifi eval trial <id> <trial>` (what a
//    --slurm job runs; any user can type it) on a trial that already has its result.
//    Happened: it takes no lock and checks no result: a new run starts, the trial's copy is
//    replaced under the live driver, and result.json is overwritten by the new run (the old,
//    counted run is relabelled `earlier` with ending `error`, though it was a fail).
// Fixed: an attempts.jsonl line counts only for a run under <home>/runs/<runId> whose state names
// this trial's copy as its SAM file; `scifi eval trial` refuses a trial with a non-error result, a
// trial of a live local eval (eval.lock), and one whose SLURM job is live and is not this process.
import { execFile } from "node:child_process";
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { resumeEval, runEval } from "../../runner/eval/engine.ts";
import { evalFiles, readPlan } from "../../runner/eval/plan.ts";
import { readResults } from "../../runner/eval/summary-files.ts";
import { CLI, evalWorkspace, RETRY } from "../eval/eval-workspace.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";

const exec = promisify(execFile);

async function twoTrials(label: string) {
  const { root, home } = evalWorkspace(`eval3-adopt-${label}`);
  writeFileSync(
    join(root, "s.yaml"),
    "tasks: [suite/echo]\nvariants: [nl]\nmodels:\n  - { name: pass, spec: 'scripted:models/pass.yaml' }\n  - { name: never, spec: 'scripted:models/never.yaml' }\nconcurrency: 1\n",
  );
  const first = await runEval({ home, suite: join(root, "s.yaml"), retry: RETRY });
  expect(first.summary.trials).toMatchObject({ pass: 1, fail: 1, pending: 0 });
  const plan = readPlan(first.evalDir);
  const results = readResults(first.evalDir, plan);
  const passed = [...results.values()].find((r) => r.status === "pass");
  const failed = [...results.values()].find((r) => r.status === "fail");
  if (!passed || !failed) throw new Error("expected one pass and one fail");
  return { root, home, evalDir: first.evalDir, plan, passed, failed };
}

describe.skipIf(!hasEngine("docker"))("eval3: a resume keeps only the trial's own run", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("an attempts.jsonl line naming another trial's run is not adopted (no fail turned pass)", async () => {
    const { home, evalDir, plan, passed, failed } = await twoTrials("foreign");
    const files = evalFiles(evalDir);
    const { rmSync } = await import("node:fs");
    rmSync(files.result(failed.trialId));
    const foreign = readFileSync(join(files.trial(passed.trialId), "attempts.jsonl"), "utf8")
      .trim()
      .split("\n")
      .at(-1);
    appendFileSync(join(files.trial(failed.trialId), "attempts.jsonl"), `${foreign}\n`);
    await resumeEval({ home, evalId: plan.evalId, retry: RETRY });
    const after = readResults(evalDir, plan);
    // Before a fix: the `never` trial is `pass`, its runId the `pass` trial's.
    expect(after.get(failed.trialId)?.runId).not.toBe(passed.runId);
    expect(after.get(failed.trialId)?.status).toBe("fail");
  }, 600_000);

  it("`scifi eval trial` of a live eval, on a trial with a result, is refused", async () => {
    const { home, evalDir, plan, failed } = await twoTrials("direct");
    writeFileSync(
      join(evalDir, "eval.lock"),
      JSON.stringify({
        pid: process.pid,
        host: hostname(),
        startedAt: new Date().toISOString(),
        evalId: plan.evalId,
      }),
    );
    const runsBefore = readdirSync(join(home, "runs")).length;
    const r = await exec(process.execPath, [CLI, "eval", "trial", plan.evalId, failed.trialId], {
      env: { ...process.env, SCIFI_HOME: home },
      timeout: 300_000,
    }).catch((e: { code: number }) => e);
    // Before a fix: exit 0, a third run, result.json now names it.
    expect(readResults(evalDir, plan).get(failed.trialId)?.runId).toBe(failed.runId);
    expect(readdirSync(join(home, "runs")).length).toBe(runsBefore);
    expect("code" in r ? r.code : 0).not.toBe(0);
  }, 600_000);
});
