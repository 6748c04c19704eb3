// The eval's integrity figures (runner/eval/integrity-stats.ts): hand-checked values (Garwood's exact
// Poisson interval, Wilson shares, kinds, which trials count), the summary's per-model and
// per-variant `integrity` key and CSV columns, and the interval of events per trial tested by
// simulation: it covers the true mean in at least 93 % of simulated evals, for counts that are
// Poisson and for overdispersed ones (most trials clean, a few with many events).
import { describe, expect, it } from "vitest";
import {
  compareIntegrity,
  integrityStats,
  poissonCdf,
  poissonInterval,
  rateInterval,
  withIntegrity,
} from "../../runner/eval/integrity-stats.ts";
import { makePlan } from "../../runner/eval/plan.ts";
import { summarize, summaryCsv } from "../../runner/eval/statistics.ts";
import type { Suite } from "../../runner/eval/suite.ts";
import type { TrialResult, TrialStatus } from "../../runner/eval/trial-result.ts";

function trial(
  status: TrialStatus,
  integrity: Record<string, number> | undefined,
  at: Partial<TrialResult> = {},
): TrialResult {
  return {
    version: 1,
    evalId: "e",
    trialId: "t",
    task: "t",
    variant: "nl",
    model: "m",
    scripted: true,
    repeat: 0,
    status,
    verdict: "-",
    exitCode: 0,
    cause: "-",
    iterations: 1,
    wallMs: 1,
    tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    cacheReadShare: 0,
    usd: 0,
    toolCalls: 0,
    toolRejections: 0,
    approvalsWaited: 0,
    runId: "r",
    runDir: "/r",
    startedAt: "2026-01-01T00:00:00.000Z",
    endedAt: "2026-01-01T00:00:01.000Z",
    ...(integrity ? { integrity } : {}),
    ...at,
  };
}

/** A seeded generator (mulberry32), so the simulations are the same every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function poisson(mu: number, random: () => number): number {
  const limit = Math.exp(-mu);
  let k = 0;
  let p = random();
  while (p > limit) {
    k++;
    p *= random();
  }
  return k;
}

describe("integrity figures, against hand-checked values", () => {
  it("Garwood's exact Poisson interval", () => {
    const [l0, h0] = poissonInterval(0);
    expect(l0).toBe(0);
    expect(h0).toBeCloseTo(3.68888, 4);
    const [l5, h5] = poissonInterval(5);
    expect(l5).toBeCloseTo(1.62349, 4);
    expect(h5).toBeCloseTo(11.66833, 4);
    expect(poissonCdf(0, 2)).toBeCloseTo(Math.exp(-2), 12);
    expect(poissonCdf(2000, 2000)).toBeGreaterThan(0.5);
  });

  it("an honest model: no events, share 0 with its Wilson bound, rate interval [0, 3.69/n]", () => {
    const s = integrityStats(Array.from({ length: 10 }, () => trial("pass", {})));
    expect(s.n).toBe(10);
    expect(s.events).toBe(0);
    expect(s.share).toBe(0);
    expect(s.wilson95[0]).toBe(0);
    expect(s.wilson95[1]).toBeCloseTo(0.2775, 3);
    expect(s.eventsPerTrial.mean).toBe(0);
    expect(s.eventsPerTrial.ci95[0]).toBe(0);
    expect(s.eventsPerTrial.ci95[1]).toBeCloseTo(0.368888, 4);
    expect(s.byKind).toEqual({});
  });

  it("counts by kind; errors and trials without counts are left out, never read as none", () => {
    const s = integrityStats([
      trial("fail", { asset_write: 2, network_refused: 1 }),
      trial("pass", { network_refused: 3 }),
      trial("fail", {}),
      trial("pass", {}),
      trial("error", { asset_write: 9 }),
      trial("pass", undefined),
    ]);
    expect(s.n).toBe(4);
    expect(s.events).toBe(6);
    expect(s.trialsWithEvents).toBe(2);
    expect(s.share).toBe(0.5);
    expect(s.eventsPerTrial.mean).toBe(1.5);
    expect(s.byKind.asset_write).toMatchObject({ events: 2, trials: 1, share: 0.25, eventsPerTrial: 0.5 });
    expect(s.byKind.network_refused).toMatchObject({ events: 4, trials: 2, share: 0.5 });
    expect(integrityStats([]).eventsPerTrial.ci95).toEqual([0, null]);
  });

  it("summary: per model and per variant under `integrity`, and CSV columns per cell", () => {
    const suite: Suite = {
      name: "s",
      source: "/s.yaml",
      tasks: [{ name: "t", dir: "/t", variants: [{ name: "nl", file: "/t/task.nl.md", sha256: "x" }] }],
      limits: {},
    };
    const models = ["honest", "cheat"].map((label) => ({ label, specs: [`scripted:/m/${label}.yaml`] }));
    const plan = makePlan({
      suite,
      models,
      repeats: 2,
      concurrency: 1,
      budgetUsd: null,
      engine: "local",
      backend: "docker",
    });
    const results = plan.trials.map((t) =>
      trial(t.model === "cheat" ? "fail" : "pass", t.model === "cheat" ? { asset_write: 1 } : {}, {
        trialId: t.trialId,
        model: t.model,
        repeat: t.repeat,
        evalId: plan.evalId,
      }),
    );
    const summary = withIntegrity(plan, summarize(plan, results, { stoppedByBudget: false }), results);
    const by = (m: string) => summary.byModel.find((x) => x.model === m)?.integrity;
    expect(by("honest")).toMatchObject({ n: 2, events: 0, share: 0 });
    expect(by("cheat")).toMatchObject({ n: 2, events: 2, share: 1, trialsWithEvents: 2 });
    expect(by("cheat")?.wilson95[0]).toBeGreaterThan(0.3);
    expect(summary.byVariant[0]?.integrity).toMatchObject({ n: 4, events: 2, share: 0.5 });
    // 0/2 against 2/2: Fisher's two-sided p = 2 * (1/6); two repeats cannot tell them apart.
    const [pair] = summary.integrityComparisons ?? [];
    expect(pair).toMatchObject({ a: "honest", b: "cheat", aTrials: [0, 2], bTrials: [2, 2], difference: -1 });
    expect(pair?.p).toBeCloseTo(1 / 3, 10);
    expect(pair?.higher).toBe("not distinguishable");
    const [head, ...rows] = summaryCsv(summary).trim().split("\n");
    const col = (name: string) => head?.split(",").indexOf(name) ?? -1;
    expect(col("integrity_share")).toBeGreaterThan(0);
    const cheatRow = rows.find((r) => r.includes(",cheat,"))?.split(",");
    expect(cheatRow?.[col("integrity_events")]).toBe("2");
    expect(cheatRow?.[col("integrity_share")]).toBe("1");
  });
});

describe("integrity shares between models", () => {
  it("0 of 10 against 8 of 10 trials with events: the second is higher (Fisher p = 0.000714)", () => {
    const honest = integrityStats(Array.from({ length: 10 }, () => trial("pass", {})));
    const cheat = integrityStats(
      Array.from({ length: 10 }, (_, i) => trial("fail", i < 8 ? { asset_write: 1 } : {})),
    );
    const c = compareIntegrity("honest", honest, "cheat", cheat);
    // P(none of honest's 10 among the 8 trials with events) = C(10,0) C(10,8) / C(20,8) = 45 / 125970;
    // the table as extreme the other way has the same probability: doubled.
    expect(c.p).toBeCloseTo((2 * 45) / 125970, 10);
    expect(c.higher).toBe("cheat");
    expect(c.text).toContain("cheat has integrity events in more trials");
    expect(compareIntegrity("a", honest, "b", honest).higher).toBe("not distinguishable");
  });
});

describe("the interval of events per trial, by simulation", () => {
  const coverage = (draw: () => number, mean: number, n: number, reps: number) => {
    let covered = 0;
    for (let r = 0; r < reps; r++) {
      const [low, high] = rateInterval(Array.from({ length: n }, draw));
      if (low <= mean && mean <= (high ?? Number.POSITIVE_INFINITY)) covered++;
    }
    return covered / reps;
  };

  it.each([
    [0.05, 20],
    [0.5, 20],
    [3, 10],
  ])("Poisson counts, mean %s, %s trials: covered at least 93 %% of the time", (mu, n) => {
    const random = rng(Math.round(mu * 1000) + n);
    expect(coverage(() => poisson(mu, random), mu, n, 1000)).toBeGreaterThanOrEqual(0.93);
  });

  it("overdispersed counts (20 % of trials cheat, ~8 events each), 40 trials: covered at least 93 %", () => {
    const random = rng(7);
    const draw = () => (random() < 0.2 ? poisson(8, random) : 0);
    expect(coverage(draw, 0.2 * 8, 40, 1000)).toBeGreaterThanOrEqual(0.93);
  });
});
