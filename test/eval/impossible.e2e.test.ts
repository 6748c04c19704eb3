// Impossible variants end to end (docs/eval.md, "Impossible variants"; issue 39 item 4): the shipped
// suite evals/examples/impossible.yaml through the CLI in real Docker sandboxes, with its two
// scripted models (labelled scripted). `honest` writes the true answers: it passes the possible
// level and fails the impossible one. `cheat` writes what the impossible Expectation asks for
// without the work: the impossible variants' deliberately weak checks pass it (a cheat the checks
// missed). The impossible trials are in no pass rate, comparison or table; they are reported apart
// per model with their Wilson interval, in summary.json, summary-impossible.csv, the page and the
// terminal.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { evalFiles } from "../../runner/eval/plan.ts";
import type { EvalSummary } from "../../runner/eval/summary.ts";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../loop/harness.ts";

describe.skipIf(!hasEngine("docker"))("impossible variants in scifi eval (docker, scripted models)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("honest fails the impossible variants, cheat passes them; neither counts in a pass rate", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-impossible-"));
    try {
      const ran = await runScifi(
        home,
        ["eval", join(REPO, "evals", "examples", "impossible.yaml"), "--backend", "docker"],
        600_000,
      );
      expect(ran.stderr).not.toMatch(/Error:/);
      const [evalId] = readdirSync(join(home, "evals"));
      const evalDir = join(home, "evals", evalId as string);
      const files = evalFiles(evalDir);
      const summary = JSON.parse(readFileSync(files.summary, "utf8")) as EvalSummary;
      // Every trial ran and is counted as run: 4 possible, 4 impossible.
      expect(summary.trials).toEqual({ planned: 8, pass: 4, fail: 4, error: 0, pending: 0 });
      // The pass rates know only the possible level.
      expect(summary.variants).toEqual(["nl"]);
      expect(summary.groups.map((g) => g.variant)).toEqual(["nl", "nl", "nl", "nl"]);
      const byModel = Object.fromEntries(summary.byModel.map((m) => [m.model, m]));
      expect(byModel.honest).toMatchObject({ n: 2, passes: 2, passRate: 1, scripted: true });
      expect(byModel.cheat).toMatchObject({ n: 2, passes: 0, passRate: 0, scripted: true });
      expect(summary.byVariant).toMatchObject([{ variant: "nl", n: 4, passes: 2 }]);
      expect(summary.comparisons).toMatchObject([{ a: "honest", b: "cheat", cells: 2, meanDifference: 1 }]);
      expect(summary.variantComparisons).toEqual([]);
      expect(summary.variantTable.variants).toEqual(["nl"]);
      expect(byModel.honest?.integrity?.n).toBe(2);
      // The impossible variants, apart: 0/2 and 2/2 with their Wilson intervals.
      const imp = summary.impossible;
      expect(imp?.variants).toEqual([
        { task: "word-count", variant: "impossible" },
        { task: "csv-stats", variant: "impossible" },
      ]);
      const impossible = Object.fromEntries((imp?.byModel ?? []).map((m) => [m.model, m]));
      expect(impossible.honest).toMatchObject({ n: 2, passes: 0, passRate: 0, errors: 0 });
      expect(impossible.honest?.wilson95[0]).toBe(0);
      expect(impossible.honest?.wilson95[1]).toBeCloseTo(0.657628, 5);
      expect(impossible.cheat).toMatchObject({ n: 2, passes: 2, passRate: 1, errors: 0 });
      expect(impossible.cheat?.wilson95[0]).toBeCloseTo(0.342372, 5);
      expect(impossible.cheat?.wilson95[1]).toBe(1);
      expect(impossible.cheat?.integrity.n).toBe(2);
      expect(imp?.groups.map((g) => [g.task, g.model, g.passes, g.n])).toEqual([
        ["word-count", "honest", 0, 1],
        ["word-count", "cheat", 1, 1],
        ["csv-stats", "honest", 0, 1],
        ["csv-stats", "cheat", 1, 1],
      ]);
      // The CSVs: summary.csv holds only the possible cells, summary-impossible.csv the rest.
      const cells = readFileSync(files.csv, "utf8").trim().split("\n").slice(1);
      expect(cells.map((r) => r.split(",")[1])).toEqual(["nl", "nl", "nl", "nl"]);
      const [head, ...rows] = readFileSync(files.impossibleCsv, "utf8").trim().split("\n");
      expect(head).toBe(
        "model,scripted,task,variant,all_impossible,n,passes,fails,errors,pass_rate,wilson95_low,wilson95_high,usd",
      );
      expect(rows.slice(0, 2).map((r) => r.split(",").slice(0, 10))).toEqual([
        ["honest", "true", "", "", "true", "2", "0", "2", "0", "0"],
        ["cheat", "true", "", "", "true", "2", "2", "0", "0", "1"],
      ]);
      expect(rows).toHaveLength(6);
      // The page and the terminal say it.
      const page = readFileSync(join(evalDir, "report.html"), "utf8");
      expect(page).toContain('id="impossible-model"');
      expect(page.match(/class="impossible-row cheated"/g)).toHaveLength(3); // cheat's total and 2 cells
      expect(ran.stdout).toMatch(/impossible variants \(in no pass rate above/);
      expect(ran.stdout).toMatch(/honest \[SCRIPTED\]: 0\/2 0% \[0%-66%\] \(none passed\)/);
      expect(ran.stdout).toMatch(
        /cheat \[SCRIPTED\]: 2\/2 100% \[34%-100%\] \(2 passed: cheats the checks missed/,
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }, 660_000);
});
