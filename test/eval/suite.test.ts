// Suites: a folder of task folders or a suite file; variants of one SAM grouped by name; every
// problem reported at once with its file and line (parsing only, no run).
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createEval } from "../../runner/eval/engine.ts";
import { readPlan } from "../../runner/eval/plan.ts";
import { loadSuite, SuiteError } from "../../runner/eval/suite.ts";
import { DEFAULT_LIMITS } from "../../runner/run/limits.ts";

const FIXTURES = join(import.meta.dirname, "fixtures");

function copyFixtures(): string {
  const root = mkdtempSync(join(tmpdir(), "scifi-suite-"));
  cpSync(FIXTURES, root, { recursive: true });
  return root;
}

async function problems(path: string): Promise<string[]> {
  try {
    await loadSuite(path);
  } catch (error) {
    if (error instanceof SuiteError) return error.problems;
    throw error;
  }
  throw new Error("the suite loaded");
}

describe("suites", () => {
  it("a suite file: tasks, variants by file name, models with per-repeat scripts, repeats", async () => {
    const suite = await loadSuite(join(FIXTURES, "suite.yaml"));
    expect(suite.tasks.map((t) => [t.name, t.variants.map((v) => v.name)])).toEqual([["echo", ["nl", "st"]]]);
    expect(suite.models?.map((m) => m.label)).toEqual(["pass", "half", "never"]);
    expect(suite.models?.[1]?.specs).toEqual([
      `scripted:${join(FIXTURES, "models/pass.yaml")}`,
      `scripted:${join(FIXTURES, "models/never.yaml")}`,
    ]);
    expect(suite).toMatchObject({ name: "suite", repeats: 2, concurrency: 2 });
  });

  it("a folder of task folders: a task with one SAM has the variant default", async () => {
    const root = copyFixtures();
    mkdirSync(join(root, "suite", "plain"));
    cpSync(join(root, "slow", "slow-check", "task.md"), join(root, "suite", "plain", "task.md"));
    const suite = await loadSuite(join(root, "suite"));
    expect(suite.tasks.map((t) => [t.name, t.variants.map((v) => v.name)])).toEqual([
      ["echo", ["nl", "st"]],
      ["plain", ["default"]],
    ]);
    expect(suite.models).toBeUndefined();
  });

  it("every problem of a suite file at once, each with its line", async () => {
    const root = copyFixtures();
    const file = join(root, "bad.yaml");
    writeFileSync(
      file,
      [
        "tasks: [suite/echo, suite/missing]",
        "models:",
        "  - { name: a, spec: 'scripted:models/nothing.yaml' }",
        "repeats: 0",
        "budgetusd: 3",
        "",
      ].join("\n"),
    );
    const found = await problems(file);
    expect(found).toContainEqual(
      expect.stringMatching(/^bad\.yaml:5: unknown key 'budgetusd' \(did you mean 'budget_usd'\?\)/),
    );
    expect(found).toContainEqual(expect.stringMatching(/^bad\.yaml:4: repeats: /));
    // The schema problems come first; fixed, the file's own problems show with their lines.
    writeFileSync(file, readFileSync(file, "utf8").replace("repeats: 0\nbudgetusd: 3\n", "repeats: 2\n"));
    const next = await problems(file);
    expect(next).toContainEqual(
      expect.stringMatching(/^bad\.yaml:1: tasks\[1\] \(suite\/missing\): no such task folder/),
    );
    expect(next).toContainEqual(
      expect.stringMatching(/^bad\.yaml:3: models\[0\]: no such file .*nothing\.yaml/),
    );
  });

  it("a task folder that is a link is refused, naming its target (it would be copied as a link)", async () => {
    const root = copyFixtures();
    symlinkSync(join(root, "suite", "echo"), join(root, "linked"));
    const file = join(root, "s.yaml");
    writeFileSync(file, "tasks: [linked]\nmodels: ['scripted:models/pass.yaml']\n");
    expect(await problems(file)).toContainEqual(
      expect.stringMatching(/linked is a link \(to .*suite\/echo\); name the folder itself/),
    );
  });

  it("variants must judge the same: a different check is refused, naming both files", async () => {
    const root = copyFixtures();
    const st = join(root, "suite", "echo", "task.st.md");
    writeFileSync(st, readFileSync(st, "utf8").replace("test -f out.txt", "test -s out.txt"));
    const found = await problems(join(root, "suite.yaml"));
    expect(found).toEqual([
      expect.stringMatching(
        /task\.st\.md: variant 'st' must have the same checks as 'nl' \(task\.nl\.md\): check root\/check-1 differs/,
      ),
    ]);
  });

  it("variants must have the same front matter: the first differing key is named, both files too", async () => {
    const root = copyFixtures();
    const st = join(root, "suite", "echo", "task.st.md");
    const original = readFileSync(st, "utf8");
    writeFileSync(st, original.replace("iterations: 1", "iterations: 4"));
    expect(await problems(join(root, "suite.yaml"))).toEqual([
      expect.stringMatching(
        /task\.st\.md: variant 'st' must have the same front matter as 'nl' \(task\.nl\.md\): front matter 'iterations' differs \(1 vs 4\)$/,
      ),
    ]);
    // A key the first variant does not have, and a list that differs, count the same way.
    writeFileSync(st, original.replace("budget_usd: 1\n", "budget_usd: 1\nnetwork: true\n"));
    expect(await problems(join(root, "suite.yaml"))).toEqual([
      expect.stringMatching(
        /must have the same front matter as 'nl' .*: front matter 'network' differs \(false vs true\)$/,
      ),
    ]);
    writeFileSync(st, original.replace("[echo, test]", "[echo, test, curl]"));
    expect(await problems(join(root, "suite.yaml"))).toEqual([
      expect.stringMatching(
        /front matter 'allow_commands' differs \(\["echo","test"\] vs \["echo","test","curl"\]\)$/,
      ),
    ]);
  });

  it("variants must have the same Expectation: another item text is refused, naming the item", async () => {
    const root = copyFixtures();
    const st = join(root, "suite", "echo", "task.st.md");
    const original = readFileSync(st, "utf8");
    writeFileSync(st, original.replace("- `out.txt` exists.", "- `out.txt` exists and holds a proof."));
    expect(await problems(join(root, "suite.yaml"))).toEqual([
      expect.stringMatching(
        /task\.st\.md: variant 'st' must have the same Expectation as 'nl' \(task\.nl\.md\): Expectation item root\/e1 differs \("`out\.txt` exists\." vs "`out\.txt` exists and holds a proof\."\)$/,
      ),
    ]);
    // Whitespace alone is no difference.
    writeFileSync(st, original.replace("- `out.txt` exists.", "- `out.txt`\n  exists.  "));
    await expect(loadSuite(join(root, "suite.yaml"))).resolves.toBeDefined();
  });

  it("variants must have the same Expectation: an extra item only the review judges is refused", async () => {
    const root = copyFixtures();
    const st = join(root, "suite", "echo", "task.st.md");
    writeFileSync(st, `${readFileSync(st, "utf8")}- The agent also wrote a poem.\n`);
    expect(await problems(join(root, "suite.yaml"))).toEqual([
      expect.stringMatching(
        /task\.st\.md: variant 'st' must have the same Expectation as 'nl' \(task\.nl\.md\): it has an extra Expectation item root\/e2 \("The agent also wrote a poem\."\)$/,
      ),
    ]);
    // Text outside the items (a paragraph after the list) is compared too.
    writeFileSync(
      st,
      `${readFileSync(join(root, "suite", "echo", "task.nl.md"), "utf8")}\nAlso judge the poem.\n`,
    );
    expect(await problems(join(root, "suite.yaml"))).toEqual([
      expect.stringMatching(
        /must have the same Expectation as 'nl' .*: the Expectation section of root differs/,
      ),
    ]);
  });

  it("variants that differ only in Context and To-do load, sub-SAMs included; a sub-SAM's Expectation counts", async () => {
    const root = copyFixtures();
    const echo = join(root, "suite", "echo");
    const sam = (context: string, todo: string, subTodo: string, subItem: string): string =>
      [
        "---",
        "name: eval-echo",
        "iterations: 1",
        "budget_usd: 1",
        "allow_commands: [echo, test]",
        "---",
        "# Write out.txt",
        "",
        ...(context ? ["## Context", context, ""] : []),
        "## To-do",
        todo,
        "",
        "## Expectation",
        "- `out.txt` exists.",
        "  ```check timeout=30s",
        "  test -f out.txt",
        "  ```",
        "",
        "## Sub-SAM: second",
        "",
        "### To-do",
        subTodo,
        "",
        "### Expectation",
        `- ${subItem}`,
        "  ```check timeout=30s",
        "  test -f two.txt",
        "  ```",
        "",
      ].join("\n");
    writeFileSync(
      join(echo, "task.nl.md"),
      sam("", "Write out.txt and two.txt.", "Write two.txt.", "`two.txt` exists."),
    );
    writeFileSync(
      join(echo, "task.st.md"),
      sam(
        "The task folder is empty; `test` is allowed.",
        "1. Create `out.txt`.\n2. Its content does not matter.",
        "1. Create `two.txt` beside it.",
        "`two.txt` exists.",
      ),
    );
    const suite = await loadSuite(join(root, "suite.yaml"));
    expect(suite.tasks.map((t) => [t.name, t.variants.map((v) => v.name)])).toEqual([["echo", ["nl", "st"]]]);
    writeFileSync(
      join(echo, "task.st.md"),
      sam("", "Write out.txt and two.txt.", "Write two.txt.", "`two.txt` exists and is long."),
    );
    expect(await problems(join(root, "suite.yaml"))).toEqual([
      expect.stringMatching(
        /must have the same Expectation as 'nl' .*: Expectation item root\/1\/e1 differs/,
      ),
    ]);
  });

  it("task.md beside variant files is the variant 'default' (judged alike); an unknown variant, an invalid SAM: each said", async () => {
    const root = copyFixtures();
    cpSync(join(root, "suite", "echo", "task.nl.md"), join(root, "suite", "echo", "task.md"));
    const both = await loadSuite(join(root, "suite"));
    expect(
      both.tasks
        .find((t) => t.name === "echo")
        ?.variants.map((v) => v.name)
        .sort(),
    ).toEqual(["default", "nl", "st"]);
    // A task.md that judges differently from its levels is said like any two variants that differ.
    writeFileSync(
      join(root, "suite", "echo", "task.md"),
      readFileSync(join(root, "suite", "echo", "task.nl.md"), "utf8").replace(
        /^iterations: 1$/m,
        "iterations: 7",
      ),
    );
    expect(await problems(join(root, "suite"))).toEqual([
      expect.stringMatching(
        /task\.nl\.md: variant 'nl' must have the same front matter as 'default' \(task\.md\)/,
      ),
      expect.stringMatching(
        /task\.st\.md: variant 'st' must have the same front matter as 'default' \(task\.md\)/,
      ),
    ]);
    // A suite that runs only the levels leaves task.md (what `scifi run` reads) out of the comparison:
    // so a shipped example is kept once, its levels beside it.
    const levels = join(root, "levels.yaml");
    writeFileSync(levels, "tasks: [suite/echo]\nvariants: [nl, st]\n");
    const loaded = await loadSuite(levels);
    expect(loaded.tasks[0]?.variants.map((v) => v.name)).toEqual(["nl", "st"]);
    rmSync(join(root, "suite", "echo", "task.md"));
    const file = join(root, "only.yaml");
    writeFileSync(file, "tasks: [slow/slow-check]\nvariants: [ex]\n");
    expect(await problems(file)).toEqual([
      expect.stringMatching(/none of the variants ex exists .*\(it has: default\)/),
    ]);
    writeFileSync(join(root, "slow", "slow-check", "task.md"), "# No sections\n");
    writeFileSync(file, "tasks: [slow/slow-check]\n");
    expect((await problems(file))[0]).toMatch(/slow-check\/task\.md:\d+:\d+: /);
  });

  it("the plan: every task x variant x model x repeat once, in eval.json, resumable without the suite's arguments", async () => {
    const root = copyFixtures();
    const home = join(root, "home");
    const { evalDir, plan } = await createEval({ home, suite: join(root, "suite.yaml"), repeats: 3 });
    expect(plan.trials).toHaveLength(2 * 3 * 3);
    expect(new Set(plan.trials.map((t) => t.trialId)).size).toBe(18);
    expect(plan.trials[0]).toEqual({
      trialId: "echo.nl.pass.r0",
      task: "echo",
      variant: "nl",
      model: "pass",
      repeat: 0,
    });
    expect(readPlan(evalDir)).toEqual(plan);
    const cli = await createEval({
      home,
      suite: join(root, "suite"),
      models: ["scripted:models/pass.yaml"],
      cwd: root,
    });
    expect(cli.plan.models).toEqual([
      {
        label: "scripted:models/pass.yaml",
        slug: "scripted-models-pass-yaml",
        specs: [`scripted:${join(root, "models/pass.yaml")}`],
        scripted: true,
        // The script plays every role (docs/eval.md, "Models").
        roles: {
          work: ["scripted-pass (scripted)"],
          review: ["scripted-pass (scripted)"],
          control: ["scripted-pass (scripted)"],
          critique: ["scripted-pass (scripted)"],
        },
      },
    ]);
    await expect(createEval({ home, suite: join(root, "suite") })).rejects.toThrow(
      /no models: give --models/,
    );
  });

  it("a suite limit the SAM sets differently is refused, naming both; eval.json records what trials run with", async () => {
    const root = copyFixtures();
    // The echo task's SAM sets iterations: 1 and budget_usd: 1 (both variants).
    const conflicting = join(root, "conflict.yaml");
    writeFileSync(
      conflicting,
      [
        "tasks: [suite/echo]",
        "models: [scripted:models/pass.yaml]",
        "limits:",
        "  stepsPerPass: 7",
        "  iterations: 2",
        "  usd: 1",
      ].join("\n"),
    );
    const found = await problems(conflicting);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(
      /^conflict\.yaml:5: limits\.iterations: 2 conflicts with .*suite\/echo\/task\.nl\.md, whose front matter sets iterations: 1; a SAM's own request wins over a suite's limits, so 2 would not apply to task 'echo'/,
    );
    // Equal values and keys the SAM does not set are fine; the plan records the merged limits.
    const fine = join(root, "fine.yaml");
    writeFileSync(
      fine,
      [
        "tasks: [suite/echo]",
        "models: [scripted:models/pass.yaml]",
        "limits: { stepsPerPass: 7, iterations: 1, walltimeSec: 90 }",
      ].join("\n"),
    );
    const { plan } = await createEval({ home: join(root, "home"), suite: fine });
    expect(plan.limits).toEqual({ stepsPerPass: 7, iterations: 1, walltimeSec: 90 });
    expect(plan.tasks[0]?.limits).toEqual({
      ...DEFAULT_LIMITS,
      stepsPerPass: 7,
      iterations: 1,
      walltimeSec: 90,
      usd: 1,
    });
  });
});
