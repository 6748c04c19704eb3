// Impossible variants without a run (docs/eval.md, "Impossible variants"): how a suite marks them
// (task.impossible.md, the suite file's `impossible:` key), every bad input refused with its line and
// what to do, the plan keeping the mark, and the summary leaving their trials out of every pass
// rate while reporting them apart (hand-checked Wilson intervals). The run itself: impossible.e2e.test.ts.
import { cpSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createEval } from "../../runner/eval/engine.ts";
import { impossibleCsv, possiblePlan, summarizeEval } from "../../runner/eval/impossible.ts";
import { makePlan, readPlan } from "../../runner/eval/plan.ts";
import { loadSuite, type Suite, SuiteError } from "../../runner/eval/suite.ts";
import { impossibleText } from "../../runner/eval/terminal.ts";
import type { TrialStatus } from "../../runner/eval/trial-result.ts";
import { result } from "./known-eval.ts";

const FIXTURES = join(import.meta.dirname, "fixtures");

/** The fixture suite with echo's `st` level turned into `task.<name>.md` with its own Expectation. */
function suiteWithImpossible(
  name = "impossible",
  expectation = "`out.txt` holds 42.",
  check = "grep -qx 42 out.txt",
): string {
  const root = mkdtempSync(join(tmpdir(), "scifi-impossible-suite-"));
  cpSync(FIXTURES, root, { recursive: true });
  const echo = join(root, "suite", "echo");
  const nl = readFileSync(join(echo, "task.nl.md"), "utf8");
  const front = nl.slice(0, nl.indexOf("## Expectation"));
  renameSync(join(echo, "task.st.md"), join(echo, `task.${name}.md`));
  writeFileSync(
    join(echo, `task.${name}.md`),
    `${front}## Expectation\n- ${expectation}\n  \`\`\`check timeout=30s\n  ${check}\n  \`\`\`\n`,
  );
  return root;
}

async function problems(path: string): Promise<string[]> {
  try {
    await loadSuite(path, mkdtempSync(join(tmpdir(), "scifi-home-")));
  } catch (error) {
    if (error instanceof SuiteError) return error.problems;
    throw error;
  }
  throw new Error("the suite loaded");
}

describe("marking a variant impossible", () => {
  it("task.impossible.md is impossible by its name; it may differ in Expectation and checks, and nl is compared with nl", async () => {
    const root = suiteWithImpossible();
    const suite = await loadSuite(join(root, "suite"), mkdtempSync(join(tmpdir(), "scifi-home-")));
    expect(suite.tasks[0]?.variants.map((v) => [v.name, v.impossible ?? false])).toEqual([
      ["impossible", true],
      ["nl", false],
    ]);
  });

  it("the suite key marks any variant; the plan keeps the mark through eval.json", async () => {
    const root = suiteWithImpossible("contra");
    writeFileSync(
      join(root, "imp.yaml"),
      "tasks: [suite/echo]\nimpossible: [contra]\nmodels: [{ name: pass, scripts: [models/pass.yaml] }]\n",
    );
    const home = join(root, "home");
    const { evalDir, plan } = await createEval({ home, suite: join(root, "imp.yaml") });
    expect(plan.tasks[0]?.variants.map((v) => [v.name, v.impossible ?? false])).toEqual([
      ["contra", true],
      ["nl", false],
    ]);
    expect(readPlan(evalDir)).toEqual(plan);
    // Without the key, `contra` is an ordinary level: it must judge like nl, and does not.
    writeFileSync(join(root, "plain.yaml"), "tasks: [suite/echo]\n");
    expect((await problems(join(root, "plain.yaml"))).join("\n")).toMatch(
      /task\.nl\.md: variant 'nl' must have the same checks as 'contra' \(task\.contra\.md\)/,
    );
  });

  it("bad impossible: keys are refused, each with its line and what to do", async () => {
    const root = suiteWithImpossible("contra");
    writeFileSync(
      join(root, "bad.yaml"),
      [
        "tasks: [suite/echo]",
        "variants: [nl, contra]",
        "impossible:",
        "  - default",
        "  - contra",
        "  - contra",
        "  - st",
        "  - 'no such'",
      ].join("\n"),
    );
    const got = await problems(join(root, "bad.yaml"));
    expect(got).toEqual([
      expect.stringMatching(/^bad\.yaml:8: impossible\.4: a variant name \(letters, digits, _ and -\)$/),
    ]);
    writeFileSync(
      join(root, "bad.yaml"),
      [
        "tasks: [suite/echo]",
        "variants: [nl, contra]",
        "impossible:",
        "  - default",
        "  - contra",
        "  - contra",
        "  - st",
      ].join("\n"),
    );
    expect(await problems(join(root, "bad.yaml"))).toEqual([
      expect.stringMatching(
        /^bad\.yaml:4: impossible\[0\]: 'default' is every single-SAM task's task\.md.*name that variant$/,
      ),
      "bad.yaml:6: impossible[2]: 'contra' is listed twice",
      "bad.yaml:7: impossible[3]: 'st' is not among the suite's variants (nl, contra), so it would not run; add it to variants, or remove it here",
    ]);
    writeFileSync(join(root, "bad.yaml"), "tasks: [suite/echo]\nimpossible: [contra, ghost]\n");
    expect(await problems(join(root, "bad.yaml"))).toEqual([
      "bad.yaml:2: impossible[1]: no task of the suite has a variant 'ghost' (task.ghost.md); the variants are: contra, nl",
    ]);
    writeFileSync(join(root, "bad.yaml"), "tasks: [suite/echo]\nimpossible: contra\n");
    expect((await problems(join(root, "bad.yaml")))[0]).toMatch(/^bad\.yaml:2: impossible: /);
  });

  it("an impossible variant must share the front matter, and must differ in what is judged", async () => {
    const root = suiteWithImpossible();
    const file = join(root, "suite", "echo", "task.impossible.md");
    writeFileSync(file, readFileSync(file, "utf8").replace("iterations: 1", "iterations: 3"));
    expect(await problems(join(root, "suite"))).toEqual([
      expect.stringMatching(
        /task\.impossible\.md: impossible variant 'impossible' must have the same front matter as 'nl' \(task\.nl\.md\): front matter 'iterations' differs \(1 vs 3\)$/,
      ),
    ]);
    const same = suiteWithImpossible("impossible", "`out.txt` exists.", "test -f out.txt");
    expect(await problems(join(same, "suite"))).toEqual([
      expect.stringMatching(
        /task\.impossible\.md: variant 'impossible' is marked impossible but has the same checks and Expectation as 'nl' \(task\.nl\.md\), so it can be met wherever that one can; .*$/,
      ),
    ]);
  });
});

describe("a task with only impossible variants", () => {
  it("they share the front matter and may be impossible in different ways", async () => {
    const root = suiteWithImpossible("contra");
    const echo = join(root, "suite", "echo");
    const contra = readFileSync(join(echo, "task.contra.md"), "utf8");
    writeFileSync(
      join(echo, "task.nl.md"),
      contra.replace("holds 42", "holds 43").replace("-qx 42", "-qx 43"),
    );
    writeFileSync(join(root, "all.yaml"), "tasks: [suite/echo]\nimpossible: [contra, nl]\n");
    const suite = await loadSuite(join(root, "all.yaml"), mkdtempSync(join(tmpdir(), "scifi-home-")));
    expect(suite.tasks[0]?.variants.map((v) => v.impossible)).toEqual([true, true]);
    writeFileSync(join(echo, "task.nl.md"), contra.replace("iterations: 1", "iterations: 2"));
    expect(await problems(join(root, "all.yaml"))).toEqual([
      expect.stringMatching(
        /task\.nl\.md: impossible variant 'nl' must have the same front matter as 'contra'/,
      ),
    ]);
  });
});

const hand: Suite = {
  name: "hand",
  source: "/suites/hand.yaml",
  tasks: [
    {
      name: "t",
      dir: "/suites/t",
      variants: [
        { name: "nl", file: "/suites/t/task.nl.md", sha256: "x" },
        { name: "impossible", file: "/suites/t/task.impossible.md", sha256: "y", impossible: true },
      ],
    },
  ],
  limits: {},
};

describe("the summary: impossible trials apart", () => {
  const models = ["honest", "cheat"].map((label) => ({ label, specs: [`scripted:/m/${label}.yaml`] }));
  const plan = makePlan({
    suite: hand,
    models,
    repeats: 4,
    concurrency: 2,
    budgetUsd: null,
    engine: "local",
    backend: "docker",
  });
  // honest passes nl always and impossible never; cheat passes nl 1 of 4 and impossible 3 of 4, one error.
  const outcome = (variant: string, model: string, repeat: number): TrialStatus => {
    if (model === "honest") return variant === "nl" ? "pass" : "fail";
    if (variant === "nl") return repeat === 0 ? "pass" : "fail";
    return repeat === 3 ? "error" : "pass";
  };
  const results = plan.trials.map((t) =>
    result(plan as never, t.trialId, outcome(t.variant, t.model, t.repeat), { usd: 0.5, integrity: {} }),
  );
  const summary = summarizeEval(plan, results, { stoppedByBudget: false });

  it("no pass rate, comparison or table counts them", () => {
    expect(summary.variants).toEqual(["nl"]);
    expect(summary.groups.map((g) => [g.variant, g.model, g.passes, g.n])).toEqual([
      ["nl", "honest", 4, 4],
      ["nl", "cheat", 1, 4],
    ]);
    expect(summary.byModel.map((m) => [m.model, m.passes, m.n, m.errors])).toEqual([
      ["honest", 4, 4, 0],
      ["cheat", 1, 4, 0],
    ]);
    expect(summary.byVariant).toMatchObject([{ variant: "nl", n: 8, passes: 5 }]);
    expect(summary.variantComparisons).toEqual([]);
    expect(summary.byModel[1]?.integrity?.n).toBe(4);
    // What ran and what it cost: every trial.
    expect(summary.trials).toEqual({ planned: 16, pass: 8, fail: 7, error: 1, pending: 0 });
    expect(summary.budget.spentUsd).toBe(8);
    expect(possiblePlan(plan).trials).toHaveLength(8);
  });

  it("per model and per cell, with the Wilson interval", () => {
    const imp = summary.impossible;
    expect(imp?.variants).toEqual([{ task: "t", variant: "impossible" }]);
    const [honest, cheat] = imp?.byModel ?? [];
    expect(honest).toMatchObject({ model: "honest", n: 4, passes: 0, passRate: 0, errors: 0 });
    // 0/4: [0, 0.9604 / 1.9604]
    expect(honest?.wilson95[1]).toBeCloseTo(0.4899, 4);
    expect(cheat).toMatchObject({ model: "cheat", n: 3, passes: 3, passRate: 1, errors: 1, usd: 2 });
    // 3/3: (1 + 0.6403 - sqrt(0.4268)) / 2.2805 = 0.43850
    expect(cheat?.wilson95[0]).toBeCloseTo(0.4385, 4);
    expect(cheat?.integrity.n).toBe(3);
    expect(imp?.groups).toMatchObject([
      { task: "t", variant: "impossible", model: "honest", passes: 0, n: 4 },
      { task: "t", variant: "impossible", model: "cheat", passes: 3, n: 3 },
    ]);
    const csv = impossibleCsv(imp as NonNullable<typeof imp>)
      .trim()
      .split("\n");
    expect(csv[2]).toMatch(/^cheat,true,,,true,3,3,0,1,1,0\.438/);
    expect(csv[4]).toMatch(/^cheat,true,t,impossible,false,3,3,0,1,1,/);
    expect(impossibleText(summary)).toMatch(
      /impossible variants .*: t\/impossible\n {2}honest \[SCRIPTED\]: 0\/4 0% \[0%-49%\] \(none passed\)\n {2}cheat \[SCRIPTED\]: 3\/3 100% \[44%-100%\] \(3 passed: cheats the checks missed, or wrong checks; 1 errors\)\n$/,
    );
  });

  it("a plan without impossible variants has no impossible key, as before", () => {
    const plain = { ...plan, tasks: [{ ...plan.tasks[0], variants: [plan.tasks[0]?.variants[0]] }] };
    const s = summarizeEval(plain as typeof plan, results, { stoppedByBudget: false });
    expect(s.impossible).toBeUndefined();
  });
});
