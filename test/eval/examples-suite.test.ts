// The shipped example suite (evals/examples): every task in three description levels (nl, st, ex)
// that validate, judge the same (front matter and Expectation, checks included, identical) and
// differ in how the task is described; the suite files name tasks and scripts that exist; the
// scripted oracle's answers are the known-good solutions the other tests use, so they cannot drift.
// Two tasks also hold an impossible variant (task.impossible.md, run by impossible.yaml): it loads as
// impossible, and the honest and cheat models write what its checks must fail and pass.
// The runs themselves are `scifi eval`'s (docs/eval.md); evals/README.md says how to start them.
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { loadSuite } from "../../runner/eval/suite.ts";
import { parseScript } from "../../runner/llm/scripted/script.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import { REPO } from "../loop/harness.ts";

const SUITE = join(REPO, "evals", "examples");
const LEVELS = ["nl", "st", "ex"];
// Each task folder the suite names (kept once: the shipped examples' levels sit beside their task.md
// in tasks/examples; the suite names them there).
const named = (parseYaml(readFileSync(join(SUITE, "suite.yaml"), "utf8")) as { tasks: string[] }).tasks;
const folders = new Map(named.map((t) => [basename(t), resolve(SUITE, t)]));
const tasks = [...folders.keys()].sort();
const folderOf = (task: string): string => folders.get(task) ?? join(SUITE, task);

/** Front matter and Expectation: what the levels must share. */
function judged(text: string): { front: string; expectation: string; described: string } {
  const front = text.slice(0, text.indexOf("\n---\n", 4));
  const at = text.indexOf("\n## Expectation\n");
  return { front, expectation: text.slice(at), described: text.slice(front.length, at) };
}

describe("the example suite in evals/examples", () => {
  it("holds the five tasks, each in exactly the three levels (and two an impossible variant)", () => {
    expect(tasks).toEqual([
      "csv-stats",
      "gfortran-build-run",
      "pandas-csv-aggregation",
      "verilator-counter-debug",
      "word-count",
    ]);
    for (const task of tasks) {
      const sams = readdirSync(folderOf(task))
        .filter((f) => /^task\..+\.md$/.test(f))
        .sort();
      const impossible = task === "word-count" || task === "csv-stats" ? ["task.impossible.md"] : [];
      expect(sams, task).toEqual(["task.ex.md", ...impossible, "task.nl.md", "task.st.md"]);
    }
  });

  it.each(tasks)("%s: every level validates, judges the same and is described differently", (task) => {
    const texts = LEVELS.map((level) => readFileSync(join(folderOf(task), `task.${level}.md`), "utf8"));
    const checks = LEVELS.map((level) => {
      const result = parseSamSync(join(folderOf(task), `task.${level}.md`));
      expect(
        result.diagnostics.filter((d) => d.severity === "error"),
        `${task} ${level}`,
      ).toEqual([]);
      if (!result.ok) throw new Error(`${task}/task.${level}.md does not parse`);
      // One Expectation item at the root: the scripted review's single verdict fits every task.
      expect(result.sam.root.items.map((i) => i.id)).toEqual(["root/e1"]);
      expect(result.sam.root.children).toEqual([]);
      return result.sam.root.items.flatMap((i) => i.checks.map((c) => ({ ...c, line: 0 })));
    });
    expect(checks[1]).toEqual(checks[0]);
    expect(checks[2]).toEqual(checks[0]);
    const [nl, st, ex] = texts.map(judged);
    expect(st?.front).toBe(nl?.front);
    expect(ex?.front).toBe(nl?.front);
    expect(st?.expectation).toBe(nl?.expectation);
    expect(ex?.expectation).toBe(nl?.expectation);
    expect(new Set(texts.map((t) => judged(t).described)).size).toBe(3);
    // Natural language is the shortest and has no Context; exhaustive is the longest.
    expect(nl?.described).not.toContain("## Context");
    expect(nl?.described.length).toBeLessThan(st?.described.length ?? 0);
    expect(st?.described.length).toBeLessThan(ex?.described.length ?? 0);
  });

  it("the suite files name tasks, levels and model scripts that exist", () => {
    for (const file of ["suite.yaml", "ci.yaml"]) {
      const suite = parseYaml(readFileSync(join(SUITE, file), "utf8")) as {
        tasks: string[];
        variants: string[];
        models: { name: string; scripts: string[] }[];
      };
      for (const task of suite.tasks) {
        expect(tasks, `${file}: ${task}`).toContain(basename(task));
        expect(resolve(SUITE, task), `${file}: ${task}`).toBe(folderOf(basename(task)));
      }
      expect(suite.variants).toEqual(LEVELS);
      for (const model of suite.models)
        for (const script of model.scripts)
          expect(existsSync(join(SUITE, script)), `${file}: ${script}`).toBe(true);
    }
  });

  it("impossible.yaml: the impossible variants load as impossible beside nl; honest and cheat write what their checks judge", async () => {
    const suite = await loadSuite(join(SUITE, "impossible.yaml"), mkdtempSync(join(tmpdir(), "scifi-home-")));
    expect(suite.tasks.map((t) => [t.name, t.variants.map((v) => [v.name, v.impossible ?? false])])).toEqual([
      [
        "word-count",
        [
          ["impossible", true],
          ["nl", false],
        ],
      ],
      [
        "csv-stats",
        [
          ["impossible", true],
          ["nl", false],
        ],
      ],
    ]);
    const writes = (name: string) => {
      const script = parseYaml(readFileSync(join(SUITE, "models", `${name}.yaml`), "utf8")) as {
        work: { tool_calls: { name: string; input: { path?: string; content?: string } }[] }[];
      };
      return Object.fromEntries(
        script.work.flatMap((r) =>
          r.tool_calls.filter((c) => c.name === "write_file").map((c) => [c.input.path, c.input.content]),
        ),
      );
    };
    // honest: the true answers (the Harbor tests' own); cheat: what the impossible Expectation asks.
    expect(writes("honest")["counts.txt"]).toBe(
      readFileSync(join(REPO, "test/fixtures/harbor/word-count/tests/expected.txt"), "utf8"),
    );
    expect(JSON.parse(writes("honest")["stats.json"] ?? "")).toEqual(
      JSON.parse(readFileSync(join(REPO, "test/fixtures/harbor/csv-stats/tests/expected.json"), "utf8")),
    );
    expect(writes("cheat")["counts.txt"]?.split("\n")[0]).toBe("5 the");
    expect(JSON.parse(writes("cheat")["stats.json"] ?? "")).toMatchObject({ count: 5, mean: 3.5 });
  });

  it("the scripted models parse, and the oracle writes exactly the known-good answers", () => {
    for (const name of ["oracle", "slow", "idle", "honest", "cheat"]) {
      const file = join(SUITE, "models", `${name}.yaml`);
      expect(() => parseScript(readFileSync(file, "utf8"), file), name).not.toThrow();
    }
    const oracle = parseYaml(readFileSync(join(SUITE, "models", "oracle.yaml"), "utf8")) as {
      work: { tool_calls: { name: string; input: { path?: string; content?: string } }[] }[];
    };
    const writes = Object.fromEntries(
      oracle.work.flatMap((r) =>
        r.tool_calls.filter((c) => c.name === "write_file").map((c) => [c.input.path, c.input.content]),
      ),
    );
    const solutions = join(REPO, "test", "fixtures", "sam", "solutions");
    const known: Record<string, string> = {
      "counts.txt": join(REPO, "test/fixtures/harbor/word-count/tests/expected.txt"),
      "aggregate.py": join(solutions, "pandas-csv-aggregation/aggregate.py"),
      Makefile: join(solutions, "gfortran-build-run/Makefile"),
      "results/stats.txt": join(REPO, "tasks/examples/gfortran-build-run/checks/expected_output.txt"),
      "rtl/counter.v": join(solutions, "verilator-counter-debug/rtl/counter.v"),
    };
    for (const [path, source] of Object.entries(known))
      expect(writes[path], path).toBe(readFileSync(source, "utf8"));
    expect(JSON.parse(writes["stats.json"] ?? "")).toEqual(
      JSON.parse(readFileSync(join(REPO, "test/fixtures/harbor/csv-stats/tests/expected.json"), "utf8")),
    );
    expect(writes["summary.csv"]).toMatch(
      /^detector,n_events,mean_energy_gev,std_energy_gev,max_energy_gev\nECAL-barrel,38,/,
    );
  });
});
