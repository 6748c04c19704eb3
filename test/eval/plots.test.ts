// The eval page's plots: count axes tick at whole numbers, two long names never shorten to the same
// label, and the cost / pass-rate plot draws the Pareto frontier with USD per pass on its axis.
import { describe, expect, it } from "vitest";
import {
  distinctLabels,
  integerTicks,
  integerTop,
  pareto,
  paretoFrontier,
  SCRIPTED_SUFFIX,
  strip,
} from "../../runner/eval/plots.ts";
import { usd } from "../../runner/report/format.ts";

describe("the eval plots", () => {
  it("a count axis ticks at whole numbers only (the old middle tick read 2 at 1.5)", () => {
    for (const max of [1, 2, 3, 5, 7, 9, 13, 40]) {
      const top = integerTop(max);
      expect(top).toBeGreaterThanOrEqual(max);
      const values = integerTicks(top).map((f) => f * top);
      expect(values[0]).toBe(0);
      expect(values.at(-1)).toBe(top);
      for (const v of values) expect(Number.isInteger(Math.round(v * 1e9) / 1e9), `${max}: ${v}`).toBe(true);
    }
    const svg = String(
      strip(
        "iterations",
        ["a"],
        [1, 3].map((value) => ({ category: "a", value, status: "pass", label: "t" })),
        "plot-iterations",
      ),
    );
    const ticks = [...svg.matchAll(/class="tick" text-anchor="end">([^<]*)</g)].map((m) => m[1]);
    expect(ticks).toEqual(["0", "1", "2", "3"]);
  });

  it("two long names that share their start keep distinct labels", () => {
    const names = [
      "anthropic:claude-sonnet-5-20260101-long-context",
      "anthropic:claude-sonnet-5-20260101-short-context",
      `scripted:/very/long/path/to/models/a.yaml${SCRIPTED_SUFFIX}`,
      `scripted:/very/long/path/to/models/b.yaml${SCRIPTED_SUFFIX}`,
      "same",
      "same",
    ];
    const shown = distinctLabels(names, 20);
    expect(new Set(shown.slice(0, 4)).size).toBe(4);
    for (const s of shown.slice(0, 4)) expect(s.length).toBeLessThanOrEqual(20);
    expect(shown[2]?.endsWith(SCRIPTED_SUFFIX)).toBe(true);
    // Identical names may look alike; different ones whose start and end agree get their position.
    expect(shown[4]).toBe("same");
    const twins = distinctLabels(["abcdefghij-x-klmnopqrst", "abcdefghij-y-klmnopqrst"], 10);
    expect(twins[0]).not.toBe(twins[1]);
  });

  it("the Pareto frontier: no model on it is beaten on cost per pass and on pass rate", () => {
    const points = [
      { label: "cheap", usdPerPass: 0.1, rate: 0.4 },
      { label: "dear", usdPerPass: 1, rate: 0.9 },
      { label: "worse", usdPerPass: 0.5, rate: 0.3 }, // dearer than cheap and passes less
      { label: "mid", usdPerPass: 0.4, rate: 0.6 },
    ];
    expect(paretoFrontier(points).map((p) => p.label)).toEqual(["cheap", "mid", "dear"]);
    const svg = String(
      pareto(
        "cost",
        [
          ...points.map((p) => ({ ...p, low: p.rate - 0.1, high: p.rate + 0.1 })),
          { label: "none", usdPerPass: null, rate: 0, low: 0, high: 0.3 },
        ],
        "plot-pareto",
        usd,
      ),
    );
    expect(svg.match(/class="pareto-point frontier"/g)).toHaveLength(3);
    expect(svg.match(/class="pareto-point"/g)).toHaveLength(1);
    expect(svg).toContain("USD per pass");
    expect(svg).toContain("No pass, so no USD per pass: none");
  });
});
