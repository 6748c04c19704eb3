// Attacks on `scifi eval` that held (attacker session on issues 27/30, written from docs/eval.md):
// one real scripted trial in Docker whose work agent links its task folder to the trial's
// result.json and the eval's plan and summary and writes to ../ (test/eval/fixtures/attack/): the
// writes fail, result.json stays the runner's regular file and counts the trial once as `fail`, the
// page shows the agent's blocker text escaped; each level's copy holds only its own description; a
// budget of 0 starts nothing; a SAM changed after the eval is refused on resume; a result outside
// the plan or a second copy of one counts not at all; proposal ids are never paths. What broke is
// in test/open/ae-eval-*.e2e.pending.ts.
import {
  appendFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { evalFiles, readPlan } from "../../runner/eval/plan.ts";
import { summarize } from "../../runner/eval/statistics.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { applyProposal } from "../../runner/evolve/store.ts";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";

const FIXTURE = join(import.meta.dirname, "fixtures", "attack");

describe.skipIf(!hasEngine("docker"))("scifi eval: a hostile trial agent (docker, scripted)", () => {
  const root = mkdtempSync(join(tmpdir(), "ae-eval-"));
  const home = join(root, "home");
  let evalDir = "";
  let trialDir = "";
  let code: number | null = null;
  beforeAll(async () => {
    ensureImage();
    cpSync(FIXTURE, root, { recursive: true });
    mkdirSync(home);
    code = (await runScifi(home, ["eval", join(root, "suite.yaml"), "--backend", "docker"], 300_000)).code;
    evalDir = join(home, "evals", readdirSync(join(home, "evals"))[0] as string);
    trialDir = evalFiles(evalDir).trial("hostile.default.escape.r0");
  }, 1_800_000);

  it("the agent reaches nothing outside its task folder; result.json is the runner's", () => {
    expect(code).toBe(0); // a blocked trial is a fail, not an error
    expect(readdirSync(trialDir).sort()).toEqual(["attempts.jsonl", "hostile", "result.json"]);
    expect(existsSync(join(evalFiles(evalDir).trials, "pwned.txt"))).toBe(false);
    // The links it made stay links in its own copy; nothing of the eval's was written through them.
    for (const name of ["result.json", "plan.json", "summary.json"])
      expect(lstatSync(join(trialDir, "hostile", name)).isSymbolicLink()).toBe(true);
    for (const file of [evalFiles(evalDir).result("hostile.default.escape.r0"), evalFiles(evalDir).summary])
      expect(lstatSync(file).isFile()).toBe(true);
    const result = JSON.parse(readFileSync(join(trialDir, "result.json"), "utf8")) as TrialResult;
    expect([result.trialId, result.status, result.verdict, result.scripted]).toEqual([
      "hostile.default.escape.r0",
      "fail",
      "BLOCKED",
      true,
    ]);
    const summary = JSON.parse(readFileSync(evalFiles(evalDir).summary, "utf8"));
    expect(summary.trials).toEqual({ planned: 1, pass: 0, fail: 1, error: 0, pending: 0 });
  });

  it("the page shows the agent's cause escaped", () => {
    const page = readFileSync(join(evalDir, "report.html"), "utf8");
    expect(page).not.toContain("<script>x");
    expect(page).not.toContain("\u001b");
  });

  it("a result outside the plan, or a second copy of one, counts not at all", () => {
    const plan = readPlan(evalDir);
    const result = JSON.parse(readFileSync(join(trialDir, "result.json"), "utf8")) as TrialResult;
    const forged = {
      ...result,
      status: "pass" as const,
      verdict: "PASSED",
      trialId: "hostile.default.escape.r1",
    };
    const summary = summarize(plan, [result, { ...result }, forged], { stoppedByBudget: false });
    expect(summary.trials).toEqual({ planned: 1, pass: 0, fail: 1, error: 0, pending: 0 });
  });

  it("resume refuses a SAM changed since the eval started", async () => {
    appendFileSync(join(root, "tasks", "hostile", "task.md"), "\nchanged\n");
    const r = await runScifi(home, ["eval", "--resume", readPlan(evalDir).evalId], 60_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("task.md changed since the eval started");
  }, 120_000);
});

describe.skipIf(!hasEngine("docker"))("scifi eval: description levels (docker, scripted)", () => {
  it("with every level evaluated, each trial's agent finds no other level in its copy", async () => {
    ensureImage();
    const root = mkdtempSync(join(tmpdir(), "ae-eval-levels-"));
    cpSync(FIXTURE, root, { recursive: true });
    const home = join(root, "home");
    mkdirSync(home);
    const r = await runScifi(home, ["eval", join(root, "levels-all.yaml"), "--backend", "docker"], 300_000);
    expect(r.code, r.stderr).toBe(0);
    const evalDir = join(home, "evals", readdirSync(join(home, "evals"))[0] as string);
    for (const level of ["nl", "ex"]) {
      const copy = join(evalFiles(evalDir).trial(`levels.${level}.reader.r0`), "levels");
      // The agent's `cat task.*.md` found nothing to read.
      expect(readFileSync(join(copy, "seen.txt"), "utf8")).toContain("No such file");
      expect(readFileSync(join(copy, "task.md"), "utf8")).toContain(`(${level}: the ${level} description)`);
    }
  }, 400_000);
});

describe.skipIf(!hasEngine("docker"))("scifi eval: the budget", () => {
  it("a budget of 0 schedules no trial, says so and exits 1", async () => {
    const root = mkdtempSync(join(tmpdir(), "ae-eval-budget-"));
    cpSync(FIXTURE, root, { recursive: true });
    const home = join(root, "home");
    mkdirSync(home);
    const r = await runScifi(home, ["eval", join(root, "suite.yaml"), "--budget-usd", "0"], 120_000);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain("budget spent: USD 0.0000 of 0; 1 trial(s) not started");
    expect(existsSync(join(home, "runs"))).toBe(false); // no run was started
    const evalDir = join(home, "evals", readdirSync(join(home, "evals"))[0] as string);
    const summary = JSON.parse(readFileSync(evalFiles(evalDir).summary, "utf8"));
    expect(summary.budget).toEqual({ usd: 0, spentUsd: 0, stoppedByBudget: true });
    expect(summary.trials.pending).toBe(1);
  }, 120_000);
});

describe("scifi evolve: a proposal id is never a path", () => {
  it("apply, show and reject refuse ids with / or ..", async () => {
    const home = mkdtempSync(join(tmpdir(), "ae-evolve-"));
    await expect(applyProposal(home, "../../x", { note: "n" })).rejects.toThrow(
      "'../../x' is not a proposal id",
    );
    const r = await runScifi(home, ["evolve", "show", "../../../etc/passwd"], 60_000);
    expect([r.code, r.stderr.trim()]).toEqual([
      2,
      "scifi evolve show: '../../../etc/passwd' is not a proposal id (see 'scifi evolve list')",
    ]);
  }, 60_000);
});
