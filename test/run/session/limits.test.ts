// The orchestrator's limits, step by step, as the work pass applies them.
import { describe, expect, it } from "vitest";
import {
  callKey,
  DEFAULT_LIMITS,
  PassLimits,
  parseLimitFlags,
  RunBudget,
} from "../../../runner/run/session/limits.ts";

const bash = (command: string) => ({ name: "bash", input: { command }, effect: "exec" as const });
const read = (path: string) => ({ name: "read_file", input: { path }, effect: "read" as const });
const write = (path: string) => ({
  name: "write_file",
  input: { path, content: "x" },
  effect: "write" as const,
});

describe("PassLimits", () => {
  it("has the paper's defaults", () => {
    expect(DEFAULT_LIMITS).toMatchObject({
      stepsPerPass: 30,
      toolCallsPerPass: 120,
      toolCallsPerStep: 10,
      maxRepeats: 2,
      maxRepeatsRead: 6,
      failingStepsBeforeBlocker: 3,
    });
  });

  it("ends the pass after the step limit", () => {
    const limits = new PassLimits({ ...DEFAULT_LIMITS, stepsPerPass: 2 });
    expect(limits.beforeStep()).toBeUndefined();
    expect(limits.beforeStep()).toBeUndefined();
    expect(limits.beforeStep()).toBe("step limit reached (2 steps per work pass)");
  });

  it("rejects calls beyond the per-step cap, then admits again next step", () => {
    const limits = new PassLimits({ ...DEFAULT_LIMITS, toolCallsPerStep: 2 });
    limits.beforeStep();
    expect(limits.admit(bash("a"))).toBeUndefined();
    expect(limits.admit(bash("b"))).toBeUndefined();
    expect(limits.admit(bash("c"))).toMatch(/at most 2 tool calls per step/);
    limits.beforeStep();
    expect(limits.admit(bash("c"))).toBeUndefined();
  });

  it("ends the pass when the per-pass tool-call budget is used", () => {
    const limits = new PassLimits({ ...DEFAULT_LIMITS, toolCallsPerPass: 3 });
    limits.beforeStep();
    for (const c of ["a", "b", "c"]) expect(limits.admit(bash(c))).toBeUndefined();
    expect(limits.admit(bash("d"))).toMatch(/used all 3 tool calls/);
    expect(limits.beforeStep()).toBe("tool-call limit reached (120 per work pass)".replace("120", "3"));
  });

  it("blocks an identical call after 2 runs, a read after 6, and a successful write resets both", () => {
    const limits = new PassLimits(DEFAULT_LIMITS);
    for (let i = 0; i < 2; i++) {
      limits.beforeStep();
      expect(limits.admit(bash("make"))).toBeUndefined();
    }
    limits.beforeStep();
    expect(limits.admit(bash("make"))).toMatch(/already ran 2 times/);
    for (let i = 0; i < 6; i++) {
      limits.beforeStep();
      expect(limits.admit(read("a.v"))).toBeUndefined();
    }
    limits.beforeStep();
    expect(limits.admit(read("a.v"))).toMatch(/already ran 6 times/);
    const w = write("a.v");
    expect(limits.admit(w)).toBeUndefined();
    limits.record(w, false);
    expect(limits.admit(bash("make"))).toMatch(/already ran/); // a failed write does not reset
    limits.beforeStep();
    expect(limits.admit(write("b.v"))).toBeUndefined();
    limits.record(write("b.v"), true);
    expect(limits.admit(bash("make"))).toBeUndefined();
    expect(limits.admit(read("a.v"))).toBeUndefined();
  });

  it("treats inputs with the same keys in another order as identical", () => {
    expect(callKey({ name: "grep", input: { a: 1, b: [2, { c: 3, d: 4 }] } })).toBe(
      callKey({ name: "grep", input: { b: [2, { d: 4, c: 3 }], a: 1 } }),
    );
  });

  it("asks for a blocker after three consecutive all-failing steps; a success or an empty step does not count", () => {
    const limits = new PassLimits(DEFAULT_LIMITS);
    const failStep = () => {
      limits.beforeStep();
      limits.admit(bash(`x${limits.steps}`));
      limits.record(bash(""), false);
      return limits.endStep();
    };
    expect(failStep()).toBe(false);
    expect(failStep()).toBe(false);
    limits.beforeStep();
    expect(limits.endStep()).toBe(false); // no calls: not counted either way
    limits.beforeStep();
    limits.admit(bash("ok"));
    limits.record(bash("ok"), false);
    limits.admit(bash("ok2"));
    limits.record(bash("ok2"), true);
    expect(limits.endStep()).toBe(false); // one success resets
    expect(failStep()).toBe(false);
    expect(failStep()).toBe(false);
    expect(failStep()).toBe(true);
  });
});

describe("RunBudget", () => {
  it("reports tokens, money and wall time, carrying spent amounts across a resume", () => {
    const config = { ...DEFAULT_LIMITS, tokens: 100, usd: 1, walltimeSec: 60 };
    const budget = new RunBudget(config, { tokens: 90, usd: 0, elapsedMs: 0 });
    expect(budget.exhausted()).toBeUndefined();
    budget.add(10, 0);
    expect(budget.exhausted()).toBe("token limit reached (100 of 100)");
    const money = new RunBudget(config);
    money.add(0, 1.5);
    expect(money.exhausted()).toMatch(/^budget limit reached \(USD 1.5000 of 1\)/);
    const late = new RunBudget(config, { tokens: 0, usd: 0, elapsedMs: 61_000 });
    expect(late.exhausted()).toBe("wall time limit reached (60 s)");
  });
});

describe("--limit flags", () => {
  it("parses known keys and refuses unknown keys and bad values", () => {
    expect(parseLimitFlags(["stepsPerPass=20", "usd=0.5"])).toEqual({ stepsPerPass: 20, usd: 0.5 });
    expect(parseLimitFlags(["steps=20"])).toMatch(
      /^--limit steps=20: unknown limit 'steps'; limits: stepsPerPass, /,
    );
    expect(parseLimitFlags(["usd=-1"])).toBe("--limit usd=-1: the value must be a positive number");
    expect(parseLimitFlags(["usd"])).toBe("--limit usd: the value must be a positive number");
  });
});
