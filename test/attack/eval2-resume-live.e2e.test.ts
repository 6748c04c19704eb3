// Attack on `scifi eval --resume` (attacker session eval2, written from docs/eval.md "Durability
// and resume" and docs/loop.md "Crash and resume").
// Promise (docs/eval.md): `--resume` "runs exactly the trials without a result, each again on a
// fresh copy (the unfinished attempt's copy is removed)", for an eval that was killed; every result
// is that of its trial's run. For runs the same situation is refused (docs/loop.md: "a --resume of
// a run whose process is alive is refused before it reads or cuts anything"), and a `--slurm`
// resume "waits for a trial's job that is still live instead of submitting it again".
// What was done: `scifi eval` of one trial whose scripted model passes (it sleeps 20 s in its work
// pass, then writes out.txt); while it works, `scifi eval --resume <id>` (the eval looks dead: a
// lost terminal, a node that went away, a second person).
// What happened: the resume takes the live trial for an unfinished one, removes its copy and puts
// a fresh one in its place (task.md only) under the live run's feet, then stops at the task-folder
// lock (its result: `error`, TaskFolderBusy). The live run's checks then judge the fresh copy
// (no out.txt) and its result, written last, is `fail` ("failed checks: root/check-1"): a model
// that passes is counted 0 of 1, and the summary says 0 pass, 1 fail.
// Fixed: an eval is driven under a lock (evals/<id>/eval.lock, the pid lock of runs and daemons):
// the second `--resume` is refused (exit 2) and names the process that runs the eval.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { evalFiles } from "../../runner/eval/plan.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO, waitFor } from "../run/harness.ts";
import { exited, oneTaskSuite, outTxtTask } from "./out-txt-task.ts";

const CLI = join(REPO, "bin", "scifi.js");

const TASK = outTxtTask("eval-resume-live");

const SLOW = `prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }
work:
  - tool_calls: [{ name: bash, input: { command: "sleep 20; echo ok > out.txt" } }]
  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]
review:
  - json: { items: [{ id: root/e1, pass: true, evidence: "out.txt" }], findings: [], fixes: [], rank_adjustment: 0 }
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

describe.skipIf(!hasEngine("docker"))("scifi eval --resume of an eval that is still running", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("does not take the live trial's copy away: the trial that passes is counted as passed", async () => {
    const { home, suite } = oneTaskSuite("slow", TASK, SLOW);
    const env = { ...process.env, SCIFI_HOME: home };
    const first = spawn(process.execPath, [CLI, "eval", suite], { env, stdio: "ignore" });
    const firstDone = exited(first);
    const evals = join(home, "evals");
    const evalId = await waitFor(() => (existsSync(evals) ? readdirSync(evals)[0] : undefined), 120_000, 50);
    // The trial's run is in its work pass (the 20 s sleep).
    await waitFor(
      () => (existsSync(join(home, "runs")) && readdirSync(join(home, "runs")).length ? true : undefined),
      120_000,
      50,
    );
    await new Promise((r) => setTimeout(r, 5_000));
    const second = spawn(process.execPath, [CLI, "eval", "--resume", evalId], { env, stdio: "ignore" });
    // Refused: the eval is being run (exit 2, usage: the eval.lock names its process).
    expect(await exited(second)).toBe(2);
    expect(await firstDone).not.toBeNull();

    const evalDir = join(evals, evalId);
    const result = JSON.parse(
      readFileSync(evalFiles(evalDir).result("slow.default.m.r0"), "utf8"),
    ) as TrialResult;
    // Before a fix: "fail" (failed checks: root/check-1), the copy swapped for a fresh one mid-run.
    expect(result.status, result.cause).toBe("pass");
    const summary = JSON.parse(readFileSync(evalFiles(evalDir).summary, "utf8")) as { trials: unknown };
    expect(summary.trials).toMatchObject({ planned: 1, pass: 1, fail: 0 });
  }, 600_000);
});
