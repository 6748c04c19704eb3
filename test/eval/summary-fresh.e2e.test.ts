// The summary an eval writes after each trial (from the results it holds in memory) is the summary
// a fresh computation from the trials' result.json files on disk gives, byte for byte: summary.json
// (at the computedAt it was written with), summary.csv and summary-variants.csv. Checked after every
// trial of an eval in real Docker sandboxes with scripted models, and after every trial of the same
// kind of eval SIGKILLed mid-way (the CLI, in a child process) and resumed.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { resumeEval, runEval } from "../../runner/eval/engine.ts";
import { type EvalPlan, evalFiles, readPlan } from "../../runner/eval/plan.ts";
import type { EvalSummary } from "../../runner/eval/summary.ts";
import { readResults, summaryFiles } from "../../runner/eval/summary-files.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, killChild, waitFor } from "../run/harness.ts";
import { CLI, evalWorkspace, RETRY } from "./eval-workspace.ts";

/** pass passes, half passes its even repeats (0 and 2): 6 trials, 5 pass, 1 fails. */
const SUITE = [
  "tasks: [suite/echo]",
  "variants: [nl]",
  "models:",
  "  - { name: pass, spec: 'scripted:models/pass.yaml' }",
  "  - { name: half, scripts: [models/pass.yaml, models/never.yaml] }",
  "repeats: 3",
  "concurrency: 2",
  "",
].join("\n");

/**
 * The summary files as written now, against a fresh computation from the result.json files of the
 * trials the eval has counted (`counted`: a trial running beside it may have written its own
 * result.json before the eval counts it, and that one is in the next summary).
 */
function sameAsFresh(evalDir: string, plan: EvalPlan, counted: ReadonlySet<string>): void {
  const written = JSON.parse(readFileSync(evalFiles(evalDir).summary, "utf8")) as EvalSummary;
  const onDisk = new Map([...readResults(evalDir, plan)].filter(([id]) => counted.has(id)));
  expect(onDisk.size, "every counted trial has its result.json").toBe(counted.size);
  const fresh = summaryFiles(
    evalDir,
    plan,
    onDisk,
    written.budget.stoppedByBudget,
    new Date(written.computedAt),
  );
  expect(fresh.files.map((f) => f.file.split("/").at(-1))).toEqual([
    "summary.json",
    "summary.csv",
    "summary-variants.csv",
  ]);
  for (const { file, text } of fresh.files) expect(readFileSync(file, "utf8"), file).toBe(text);
  expect(written.trials.pass + written.trials.fail + written.trials.error).toBe(counted.size);
}

describe.skipIf(!hasEngine("docker"))(
  "the summary after each trial equals a fresh one from disk (docker, scripted)",
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("an eval straight through: after every trial and at the end", async () => {
      const { root, home } = evalWorkspace("fresh");
      writeFileSync(join(root, "fresh.yaml"), SUITE);
      let plan: EvalPlan | undefined;
      let evalDir = "";
      const counted = new Set<string>();
      const checked: string[] = [];
      const outcome = await runEval({
        home,
        suite: join(root, "fresh.yaml"),
        retry: RETRY,
        onCreated: (dir, p) => {
          evalDir = dir;
          plan = p;
        },
        onBookkeeping: (id) => {
          counted.add(id);
          sameAsFresh(evalDir, plan as EvalPlan, counted);
          checked.push(id);
        },
      });
      expect(checked).toHaveLength(6);
      expect(outcome.summary.trials).toEqual({ planned: 6, pass: 5, fail: 1, error: 0, pending: 0 });
      sameAsFresh(outcome.evalDir, readPlan(outcome.evalDir), counted);
    }, 600_000);

    it("an eval SIGKILLed after its first results, then resumed: after every trial of the resume and at the end", async () => {
      const { root, home } = evalWorkspace("fresh-kill");
      writeFileSync(join(root, "fresh.yaml"), SUITE);
      const evals = join(home, "evals");
      const child: ChildProcess = spawn(process.execPath, [CLI, "eval", join(root, "fresh.yaml")], {
        env: { ...process.env, SCIFI_HOME: home },
        stdio: "ignore",
      });
      const evalDir = await waitFor(
        () => {
          const id = existsSync(evals) ? readdirSync(evals)[0] : undefined;
          const dir = id ? join(evals, id) : undefined;
          return dir && existsSync(evalFiles(dir).plan) && readResults(dir, readPlan(dir)).size >= 2
            ? dir
            : undefined;
        },
        300_000,
        20,
      );
      await killChild(child);
      const plan = readPlan(evalDir);
      const before = readResults(evalDir, plan);
      expect(before.size).toBeGreaterThanOrEqual(2);
      expect(before.size).toBeLessThan(6);
      const counted = new Set(before.keys());
      const checked: string[] = [];
      const outcome = await resumeEval({
        home,
        evalId: plan.evalId,
        retry: RETRY,
        onBookkeeping: (id) => {
          counted.add(id);
          sameAsFresh(evalDir, plan, counted);
          checked.push(id);
        },
      });
      // Only what had no result ran again, each checked once it was counted.
      expect(checked.sort()).toEqual(
        plan.trials
          .map((t) => t.trialId)
          .filter((id) => !before.has(id))
          .sort(),
      );
      expect(outcome.summary.trials).toEqual({ planned: 6, pass: 5, fail: 1, error: 0, pending: 0 });
      sameAsFresh(evalDir, plan, counted);
    }, 600_000);
  },
);
