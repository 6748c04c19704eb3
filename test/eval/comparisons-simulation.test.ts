// Does the comparison keep its promises? Simulated evals over a grid (true pass rates 0.2 to 0.95,
// 5 to 40 tasks, 1 to 10 repeats, per-task rates spread around the model's rate, shared between
// the models in part, as harder tasks are harder for both): the 95 % interval must hold the true
// difference (the mean over the simulated tasks of their true differences: inference is
// conditional on the suite's tasks) 93 to 97 % of the time, and under equal rates in every task
// the test must reject at most 5 % of the time. Where discreteness makes the band unreachable
// (few passes or few failures on a side: 5 tasks x 1 repeat, rates near 0.95) and under strong
// per-task spread (which no interval from one trial per cell can see), the interval must stay at
// least nominal, less two simulation standard errors. docs/eval.md gives the numbers.
// Deterministic (seeded); about 6 s of CPU time.
import { describe, expect, it } from "vitest";
import { exactStratifiedP, mover, rateInterval, type StratumCounts } from "../../runner/eval/comparisons.ts";

/** mulberry32: a small seeded generator, so a run is the same run every time. */
function generator(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Point {
  /** True mean pass rates of a and b over the task population. */
  rateA: number;
  rateB: number;
  tasks: number;
  repeats: number;
  /** Spread of per-task rates: 0 none, 1 up to the nearer of 0 and 1. */
  spread: number;
}

/**
 * One simulated eval: per task, each model's rate is its mean plus spread·min(μ, 1 − μ)·(u + v)/2,
 * u shared by both models and v its own, both uniform on [−1, 1] (so the rate stays in [0, 1] and
 * its mean is μ). Equal mean rates give both models the same rate in every task.
 */
function simulate(p: Point, random: () => number): { strata: StratumCounts[]; truth: number } {
  const strata: StratumCounts[] = [];
  let truth = 0;
  const binomial = (n: number, rate: number) => {
    let c = 0;
    for (let i = 0; i < n; i++) if (random() < rate) c++;
    return c;
  };
  const rateOf = (mu: number, shared: number) =>
    mu + p.spread * Math.min(mu, 1 - mu) * ((shared + 2 * random() - 1) / 2);
  for (let t = 0; t < p.tasks; t++) {
    const shared = 2 * random() - 1;
    const a = rateOf(p.rateA, shared);
    const b = p.rateA === p.rateB ? a : rateOf(p.rateB, shared);
    truth += a - b;
    strata.push({
      passesA: binomial(p.repeats, a),
      nA: p.repeats,
      passesB: binomial(p.repeats, b),
      nB: p.repeats,
    });
  }
  return { strata, truth: truth / p.tasks };
}

function coverage(p: Point, sims: number, seed: number): number {
  const random = generator(seed);
  let held = 0;
  // Every cell has the same n here: each side's mean rate is its passes over tasks x repeats, and
  // its effective n is tasks x repeats (no strata array: this loop runs a million times).
  const n = p.tasks * p.repeats;
  for (let s = 0; s < sims; s++) {
    const { passesA, passesB, truth } = simulateTotals(p, random);
    const [low, high] = mover(rateInterval(passesA / n, n), rateInterval(passesB / n, n));
    if (low <= truth + 1e-12 && truth - 1e-12 <= high) held++;
  }
  return held / sims;
}

/** simulate(), summed: the same draws in the same order. */
function simulateTotals(p: Point, random: () => number): { passesA: number; passesB: number; truth: number } {
  let passesA = 0;
  let passesB = 0;
  let truth = 0;
  for (let t = 0; t < p.tasks; t++) {
    const shared = 2 * random() - 1;
    const a = p.rateA + p.spread * Math.min(p.rateA, 1 - p.rateA) * ((shared + 2 * random() - 1) / 2);
    const b =
      p.rateA === p.rateB
        ? a
        : p.rateB + p.spread * Math.min(p.rateB, 1 - p.rateB) * ((shared + 2 * random() - 1) / 2);
    truth += a - b;
    for (let i = 0; i < p.repeats; i++) if (random() < a) passesA++;
    for (let i = 0; i < p.repeats; i++) if (random() < b) passesB++;
  }
  return { passesA, passesB, truth: truth / p.tasks };
}

function typeOneError(p: Point, sims: number, seed: number): number {
  const random = generator(seed);
  let rejected = 0;
  for (let s = 0; s < sims; s++) if (exactStratifiedP(simulate(p, random).strata) < 0.05) rejected++;
  return rejected / sims;
}

const RATES: [number, number][] = [
  [0.2, 0.2],
  [0.5, 0.5],
  [0.8, 0.8],
  [0.95, 0.95],
  [0.5, 0.2],
  [0.8, 0.2],
  [0.8, 0.5],
  [0.9, 0.5],
  [0.95, 0.2],
  [0.95, 0.8],
];
const TASKS = [5, 10, 20, 40];
const REPEATS = [1, 3, 10];
const SPREADS = [0, 0.5];
/** Strong spread: at the smallest and the largest suite. */
const STRONG = { spread: 1, tasks: [5, 40] };
const grid: Point[] = RATES.flatMap(([rateA, rateB]) => [
  ...TASKS.flatMap((tasks) =>
    REPEATS.flatMap((repeats) => SPREADS.map((spread) => ({ rateA, rateB, tasks, repeats, spread }))),
  ),
  ...STRONG.tasks.flatMap((tasks) =>
    REPEATS.map((repeats) => ({ rateA, rateB, tasks, repeats, spread: STRONG.spread })),
  ),
]);

/** Fewer expected passes or failures than this on a side: discreteness rules (the corner). */
const FEW_EXPECTED = 8;
const corner = (p: Point) =>
  Math.min(p.rateA, 1 - p.rateA, p.rateB, 1 - p.rateB) * p.tasks * p.repeats < FEW_EXPECTED;
const name = (p: Point) =>
  `a ${p.rateA} b ${p.rateB}, ${p.tasks} tasks x ${p.repeats} repeats, spread ${p.spread}`;

describe("the paired comparison over a grid of simulated evals", () => {
  it("the 95 % interval covers 93-97 % (at least 93.5 % where discreteness or strong spread rule)", () => {
    // 3000 simulations: a standard error of 0.004 on a coverage near 0.95.
    const SIMS = 3000;
    const AT_LEAST = 0.935;
    const outside: string[] = [];
    let band = 0;
    grid.forEach((p, i) => {
      const c = coverage(p, SIMS, 1000 + i);
      const inBand = !corner(p) && p.spread < 1;
      if (inBand) band++;
      if (inBand ? c < 0.93 || c > 0.97 : c < AT_LEAST) outside.push(`${name(p)}: ${c.toFixed(3)}`);
    });
    expect(outside).toEqual([]);
    // The band is asserted on most of the grid, not on a few points.
    expect(band).toBeGreaterThan(grid.length / 3);
  }, 60_000);

  it("under equal rates in every task the exact test rejects at most 5 % of the time", () => {
    // The test is exact (conditional on each task's total passes), so its size is at most 0.05 by
    // construction; a simulated rate may still read a hair above at one point by chance (the
    // standard error at 1000 simulations is 0.007): each point within two of those, the mean at most 0.05.
    const SIMS = 1000;
    const allowance = 2 * Math.sqrt((0.05 * 0.95) / SIMS);
    const above: string[] = [];
    const rates: number[] = [];
    grid
      .filter((p) => p.rateA === p.rateB)
      .forEach((p, i) => {
        const e = typeOneError(p, SIMS, 5000 + i);
        rates.push(e);
        if (e > 0.05 + allowance) above.push(`${name(p)}: ${e.toFixed(3)}`);
      });
    expect(above).toEqual([]);
    expect(rates.reduce((s, e) => s + e, 0) / rates.length).toBeLessThanOrEqual(0.05);
  }, 60_000);
});
