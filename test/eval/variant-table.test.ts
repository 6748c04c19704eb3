// The variant table (the SciFi paper's Table 1 layout: per model, tasks as rows, variants as
// columns) against values worked out by hand for a known eval, as summary.json, as
// summary-variants.csv and as the terminal prints it.
import { describe, expect, it } from "vitest";
import { summarize } from "../../runner/eval/statistics.ts";
import { variantTableText } from "../../runner/eval/terminal.ts";
import { variantTableCsv } from "../../runner/eval/variant-table.ts";
import { knownEval, planOf, result } from "./known-eval.ts";

describe("the variant table", () => {
  it("per model x variant totals with two levels, and the table with tasks as rows", () => {
    const { plan, results } = knownEval();
    // half's nl trials take 1, 2, 3, 4 iterations: mean 2.5, SE √(5/3)/2, median 2.5.
    const varied = results.map((r) =>
      r.model === "half" && r.variant === "nl" ? { ...r, iterations: r.repeat + 1, usd: 0.01 } : r,
    );
    const s = summarize(plan, varied, { stoppedByBudget: false });
    expect(s.byModelVariant.map((m) => [m.model, m.variant, m.passes, m.n, m.tasks])).toEqual([
      ["pass", "nl", 4, 4, 1],
      ["pass", "ex", 4, 4, 1],
      ["half", "nl", 2, 4, 1],
      ["half", "ex", 2, 4, 1],
      ["never", "nl", 0, 4, 1],
      ["never", "ex", 0, 4, 1],
    ]);
    const halfNl = s.byModelVariant[2];
    expect(halfNl?.iterations.mean).toBe(2.5);
    expect(halfNl?.iterations.se).toBeCloseTo(Math.sqrt(5 / 3) / 2, 12);
    expect(halfNl?.iterations.median).toBe(2.5);
    expect(halfNl?.usd).toBeCloseTo(0.04, 12);
    expect(halfNl?.usdPerPass).toBeCloseTo(0.02, 12);
    expect(halfNl?.wilson95[0]).toBeCloseTo(0.150036, 5); // Wilson 2/4
    expect(s.variantTable.variants).toEqual(["nl", "ex"]);
    expect(s.variantTable.rows.map((r) => [r.model, r.task])).toEqual([
      ["pass", "t"],
      ["pass", null],
      ["half", "t"],
      ["half", null],
      ["never", "t"],
      ["never", null],
    ]);
    expect(s.variantTable.rows[2]?.cells[0]).toMatchObject({ n: 4, passes: 2, passRate: 0.5 });
    expect(s.variantTable.rows[2]?.cells[0]?.iterations.mean).toBe(2.5);

    const csv = variantTableCsv(s.variantTable).trim().split("\n");
    const header = csv[0]?.split(",") ?? [];
    expect(header.slice(0, 6)).toEqual(["model", "scripted", "task", "all_tasks", "nl_n", "nl_passes"]);
    expect(header).toContain("ex_iterations_median");
    const row = (i: number) => Object.fromEntries(header.map((h, j) => [h, csv[i]?.split(",")[j]]));
    expect(row(3)).toMatchObject({
      model: "half",
      task: "t",
      all_tasks: "false",
      nl_passes: "2",
      nl_iterations_mean: "2.5",
      nl_usd_per_pass: "0.02",
      ex_pass_rate: "0.5",
    });
    expect(row(4)).toMatchObject({ model: "half", task: "", all_tasks: "true", nl_n: "4" });

    const text = variantTableText(s).split("\n");
    expect(text).toContain("half [SCRIPTED]");
    expect(
      text.find(
        (l) =>
          l.startsWith("  t ") &&
          l.includes("2/4 50% [15%-85%] · it 2.5±0.6 (2.5) · 1.0 s · 65 tok · $0.0400, $0.0200/pass"),
      ),
    ).toBeDefined();
  });

  it("a task without one of the levels has an empty cell there; a model without verdicts says so", () => {
    const plan = planOf(1);
    // Only the ex trials have results; nl is pending everywhere.
    const rs = plan.trials.filter((t) => t.variant === "ex").map((t) => result(plan, t.trialId, "pass"));
    const s = summarize(plan, rs, { stoppedByBudget: false });
    expect(s.variantTable.rows[0]?.cells[0]).toMatchObject({ n: 0 });
    expect(variantTableText(s)).toContain("no verdict");
  });
});
