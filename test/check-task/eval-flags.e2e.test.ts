// `scifi eval` audits each task's checks before its trials and flags what cannot discriminate
// (docs/eval.md, "Flags"), on real Docker with two scripted models: `oracle` writes the answer,
// `idle` only claims. Over three tasks: `sound` (oracle passes, idle fails: no flag),
// `nothing-passes` (its check passes untouched: a lazy agent passes, and every trial passed) and
// `solution-fails` (its reference is wrong: the solution fails, and no trial passed). The summary,
// the terminal and the page say so, with pass rates over all tasks and without the flagged ones; a
// second eval reads the audits from the cache; `--no-audit` is recorded and flags only the trials.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { EvalPlan } from "../../runner/eval/plan.ts";
import type { EvalSummary } from "../../runner/eval/summary.ts";
import { runScifi } from "../helpers/cli.ts";
import { ensureImage } from "../loop/harness.ts";
import { suiteRoot } from "./tasks.ts";

const MODELS = join(import.meta.dirname, "models");
const T = 600_000;

function evalDirOf(stdout: string): string {
  const m = /^summary: (.*)\/summary\.json/m.exec(stdout);
  if (!m?.[1]) throw new Error(`no summary line in: ${stdout}`);
  return m[1];
}

describe("scifi eval: the audit and the flags (Docker)", () => {
  const ws = suiteRoot();
  const models = `scripted:${join(MODELS, "oracle.yaml")},scripted:${join(MODELS, "idle.yaml")}`;
  beforeAll(() => ensureImage(), 1_800_000);

  it(
    "flags the lazy-passes and solution-fails tasks and the ones no or every trial passed; rates with and without",
    async () => {
      const r = await runScifi(ws.home, ["eval", ws.suite, "--models", models], T);
      expect(r.code, r.stderr).toBe(0);
      const evalDir = evalDirOf(r.stdout);
      const summary = JSON.parse(readFileSync(join(evalDir, "summary.json"), "utf8")) as EvalSummary;
      const flags = summary.flags;
      expect(flags?.audited).toBe(true);
      const byTask = Object.fromEntries((flags?.tasks ?? []).map((t) => [t.task, t]));
      expect(byTask.sound?.flags).toEqual([]);
      expect(byTask.sound?.audit).toMatchObject({ sound: true, findings: [] });
      expect(byTask["nothing-passes"]?.flags).toEqual(["lazy_passes", "every_trial_passed"]);
      expect(byTask["nothing-passes"]?.lazyPasses).toEqual(["untouched", "nothing", "constants"]);
      expect(byTask["solution-fails"]?.flags).toEqual(["solution_fails", "no_trial_passed"]);
      expect(flags?.flagged).toEqual(["nothing-passes", "solution-fails"]);
      // oracle passes sound and nothing-passes (2/3), idle only nothing-passes (1/3); without the
      // flagged tasks only sound is left: oracle 1/1, idle 0/1.
      const all = Object.fromEntries(
        summary.byModel.map((m) => [m.model.split("/").at(-1), [m.passes, m.n]]),
      );
      expect(all).toEqual({ "oracle.yaml": [2, 3], "idle.yaml": [1, 3] });
      const kept = Object.fromEntries(
        (flags?.byModelUnflagged ?? []).map((m) => [m.model.split("/").at(-1), [m.passes, m.n]]),
      );
      expect(kept).toEqual({ "oracle.yaml": [1, 1], "idle.yaml": [0, 1] });
      // eval.json records that the audit ran; the audits are kept in the eval's folder.
      const plan = JSON.parse(readFileSync(join(evalDir, "eval.json"), "utf8")) as EvalPlan;
      expect(plan.audit).toBe(true);
      // The terminal: each flagged task on a line of its own, and the rates with and without.
      expect(r.stdout).toContain("checks audited before the trials");
      expect(r.stdout).toMatch(
        /FLAG nothing-passes: a lazy agent passes its checks \(untouched, nothing, constants\); every trial passed/,
      );
      expect(r.stdout).toMatch(/FLAG solution-fails: its solution fails its checks; no trial passed/);
      expect(r.stdout).toMatch(
        /oracle\.yaml \[SCRIPTED\]: pass rate 2\/3 66\.7% over all tasks, 1\/1 100\.0% without the 2 flagged task\(s\)/,
      );
      expect(r.stderr).toMatch(/audit sound: sound \(/);
      // The page: the flags at the top, before the comparisons.
      const page = readFileSync(join(evalDir, "report.html"), "utf8");
      expect(page.indexOf('id="flags"')).toBeGreaterThan(0);
      expect(page.indexOf('id="flags"')).toBeLessThan(page.indexOf("<h2>Comparisons</h2>"));
      expect(page).toContain("its solution fails its checks; no trial passed");
      expect(page).toContain('id="unflagged"');

      // A second eval of the same tasks: every audit from the cache.
      const again = await runScifi(ws.home, ["eval", ws.suite, "--models", models], T);
      expect(again.code, again.stderr).toBe(0);
      for (const task of ["sound", "nothing-passes", "solution-fails"])
        expect(again.stderr).toMatch(new RegExp(`audit ${task}: [^\\n]*\\(\\d+\\.\\d s, cached\\)`));
    },
    T * 2,
  );

  it(
    "--no-audit: recorded in eval.json, no audit, only the trial flags",
    async () => {
      const r = await runScifi(ws.home, ["eval", ws.suite, "--models", models, "--no-audit"], T);
      expect(r.code, r.stderr).toBe(0);
      const evalDir = evalDirOf(r.stdout);
      const plan = JSON.parse(readFileSync(join(evalDir, "eval.json"), "utf8")) as EvalPlan;
      expect(plan.audit).toBe(false);
      const summary = JSON.parse(readFileSync(join(evalDir, "summary.json"), "utf8")) as EvalSummary;
      expect(summary.flags?.audited).toBe(false);
      expect(summary.flags?.tasks.map((t) => [t.task, t.audit, t.flags])).toEqual([
        ["nothing-passes", "skipped", ["every_trial_passed"]],
        ["solution-fails", "skipped", ["no_trial_passed"]],
        ["sound", "skipped", []],
      ]);
      expect(r.stdout).toContain("checks NOT audited (--no-audit)");
      expect(r.stderr).not.toMatch(/^audit /m);
    },
    T,
  );
});
