// Attacks on `scifi eval` that held (attacker session eval5; the hostile agent inside a trial's
// sandbox, then a kill of the eval and a resume; from docs/eval.md "Durability and resume").
// 1. Promise: `--resume` "removes the orphan sandboxes of the killed eval, and runs exactly the
//    trials without a result, each again on a fresh copy (the unfinished attempt's copy is
//    removed)"; "Every attempt is paid for. A run a kill cut short ... [is] listed in the new
//    result's `earlier`"; "A line of attempts.jsonl counts only for a run of that trial".
//    Done: the agent's first work call, in its trial's copy: tries to replace task.md with a SAM
//    that judges nothing (refused: the SAM is read-only in the sandbox), writes out.txt, plants
//    links named like the eval's records (attempts.jsonl -> ../attempts.jsonl, result.json ->
//    ../result.json, up -> ../.., state.json -> ../../../../runs) and a marker; its next call
//    sleeps. The eval is killed (SIGKILL, its process group) while it sleeps; the model script is
//    then replaced by an honest one that writes nothing, and the eval is resumed.
//    HELD (the attacker's first version never reached the kill: its one command stopped at the
//    read-only task.md; finished by the lead): the resumed trial ran on a fresh copy (task.md as
//    planned, no out.txt, no links) and failed; its result lists the killed run in `earlier` as
//    `interrupted`; attempts.jsonl and result.json are plain files, never followed; 0 pass, 1 fail.
import { spawn } from "node:child_process";
import { existsSync, lstatSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { evalFiles } from "../../runner/eval/plan.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO, waitFor } from "../run/harness.ts";
import { exited, oneTaskSuite, outTxtTask } from "./out-txt-task.ts";

const CLI = join(REPO, "bin", "scifi.js");
const TASK = outTxtTask("eval5-held");

// In the task folder (the bash tool's working folder): links named like the eval's records, a
// task.md rewritten to judge nothing, out.txt, then the marker; the next call sleeps until the kill.
const HOSTILE_CMD = [
  "printf -- '---\\nname: eval5-held\\n---\\n# x\\n\\n## To-do\\nx\\n\\n## Expectation\\n- ok.\\n' > task.md",
  "echo ok > out.txt",
  "ln -s ../attempts.jsonl attempts.jsonl",
  "ln -s ../result.json result.json",
  "ln -s ../.. up",
  "ln -s ../../../../runs state.json",
  "touch .started",
]
  .join(" && ")
  // The SAM is read-only in the sandbox (held): the rest goes on without it.
  .replace(" > task.md && ", " > task.md; ");

const HOSTILE = `prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }
work:
  - tool_calls: [{ name: bash, input: { command: ${JSON.stringify(HOSTILE_CMD)} } }]
  - tool_calls: [{ name: bash, input: { command: "sleep 100" } }]
  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]
review:
  - json: { items: [{ id: root/e1, pass: true, evidence: "out.txt" }], findings: [], fixes: [], rank_adjustment: 0 }
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

const HONEST = `prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }
work:
  - tool_calls: [{ name: bash, input: { command: "ls -la /task" } }]
  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]
review:
  - json: { items: [{ id: root/e1, pass: true, evidence: "out.txt" }], findings: [], fixes: [], rank_adjustment: 0 }
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

describe.skipIf(!hasEngine("docker"))("eval5: a hostile agent's copy across a kill and a resume", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("the resumed trial runs on a fresh copy, pays for the killed run, and nothing of the old copy counts", async () => {
    const { home, suite, modelFile } = oneTaskSuite("t", TASK, HOSTILE);
    const env = { ...process.env, SCIFI_HOME: home };
    const first = spawn(process.execPath, [CLI, "eval", suite], {
      env,
      stdio: "ignore",
      detached: true,
    });
    const firstDone = exited(first);
    const evals = join(home, "evals");
    const evalId = await waitFor(() => (existsSync(evals) ? readdirSync(evals)[0] : undefined), 120_000, 50);
    const evalDir = join(evals, evalId);
    const trialId = "t.default.m.r0";
    const trialDir = evalFiles(evalDir).trial(trialId);
    const copyName = (): string | undefined =>
      existsSync(trialDir)
        ? readdirSync(trialDir).find((n) => existsSync(join(trialDir, n, ".started")))
        : undefined;
    const taskName = await waitFor(copyName, 180_000, 100);
    await new Promise((r) => setTimeout(r, 2_000));
    // The eval and its whole process group are killed (SIGKILL: no cleanup runs).
    process.kill(-(first.pid as number), "SIGKILL");
    await firstDone;
    expect(existsSync(evalFiles(evalDir).result(trialId))).toBe(false);

    writeFileSync(modelFile, HONEST);
    const second = spawn(process.execPath, [CLI, "eval", "--resume", evalId], { env, stdio: "ignore" });
    await exited(second);

    const resultFile = evalFiles(evalDir).result(trialId);
    expect(lstatSync(resultFile).isFile()).toBe(true);
    expect(lstatSync(join(trialDir, "attempts.jsonl")).isFile()).toBe(true);
    const result = JSON.parse(readFileSync(resultFile, "utf8")) as TrialResult;
    // The honest second attempt writes no out.txt: it fails on the planned check.
    expect(result.status, result.cause).toBe("fail");
    expect(result.earlier?.map((e) => e.ending)).toEqual(["interrupted"]);
    expect(result.earlier?.[0]?.runId).not.toBe(result.runId);
    // The copy is the fresh one: the planned task.md, no links, no out.txt.
    const copy = join(trialDir, taskName);
    expect(readFileSync(join(copy, "task.md"), "utf8")).toBe(TASK);
    for (const name of ["out.txt", "up", "state.json", "attempts.jsonl", "result.json"])
      expect(existsSync(join(copy, name)), name).toBe(false);
    const summary = JSON.parse(readFileSync(evalFiles(evalDir).summary, "utf8")) as { trials: unknown };
    expect(summary.trials).toMatchObject({ planned: 1, pass: 0, fail: 1, error: 0 });
  }, 600_000);
});
