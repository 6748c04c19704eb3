// `scifi evolve` on a corpus of scripted runs (synthetic, in the real runs' shapes: corpus.ts):
// a model that clearly fails its rank gets a demotion proposal with its counts and p-value, one
// that is indistinguishable from its peers gets none; applying the proposal changes models.yaml
// exactly as its diff showed and records who, when and why; hostile run text is shown escaped.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { removeModel, unifiedDiff } from "../../runner/evolve/edit.ts";
import { type EvolveResult, evolve } from "../../runner/evolve/evolve.ts";
import { fisherExact } from "../../runner/evolve/fisher.ts";
import { renderResult } from "../../runner/evolve/render.ts";
import { applyProposal, listStored, readProposal, rejectProposal } from "../../runner/evolve/store.ts";
import { summariseFindings } from "../../runner/evolve/summarise.ts";
import { openHelperSession } from "../../runner/helpers/session.ts";
import { parseModelsConfig } from "../../runner/llm/config.ts";
import { inlineText } from "../../runner/markdown-quote.ts";
import { appendEntry } from "../../runner/memory/entries.ts";
import { homePaths } from "../../runner/paths.ts";
import { appliedProposals, readEvolveDecisions } from "../../runner/run-folder/evolve-applied.ts";
import { modelRuns, writeRun } from "./corpus.ts";

const HOSTILE_OUTPUT = "FAIL: count=10\x1b[8m hidden\x1b[0m\rOK: all good\u202e";
const HOSTILE_FINDING = "The counter wraps one cycle late\x1b]0;pwned\x07";

const MODELS_YAML = `# the lab's models
models:
  - name: scripted-small   # cheapest
    provider: anthropic
    model: small-model
    baseURL: http://127.0.0.1:9/v1
    rank: 1
    kinds: [work]
    prices: { input: 0, output: 0 }
    noApiKey: true

  - name: scripted-weak
    provider: anthropic
    model: weak-model
    baseURL: http://127.0.0.1:9/v1
    rank: 2
    kinds: [work]
    prices: { input: 0, output: 0 }
    noApiKey: true

  - name: scripted-steady
    provider: anthropic
    model: steady-model
    baseURL: http://127.0.0.1:9/v1
    rank: 2 # the workhorse
    kinds: [work]
    prices: { input: 0, output: 0 }
    noApiKey: true

  - name: scripted-peer
    provider: anthropic
    model: peer-model
    baseURL: http://127.0.0.1:9/v1
    rank: 2
    kinds: [control, work]
    prices: { input: 0, output: 0 }
    noApiKey: true
budget: { usd: 5 }
`;

interface Corpus {
  home: string;
  models: string;
  prompt: string;
}

function corpus(): Corpus {
  const home = mkdtempSync(join(tmpdir(), "scifi-evolve-"));
  const runs = homePaths(home).runs;
  mkdirSync(runs, { recursive: true });
  const all = [
    ...modelRuns(
      "scripted-weak",
      2,
      { passing: 0, late: 2, failing: 10 },
      {
        toolFailures: 2,
        allowlistRefusals: 1,
        failOutput: HOSTILE_OUTPUT,
        finding: HOSTILE_FINDING,
      },
    ),
    ...modelRuns("scripted-steady", 2, { passing: 9, late: 3, failing: 0 }),
    ...modelRuns("scripted-peer", 2, { passing: 10, late: 2, failing: 0 }),
    ...modelRuns("scripted-small", 1, { passing: 2, late: 1, failing: 1 }),
  ];
  for (const run of all) writeRun(runs, run);
  const models = join(home, "models.yaml");
  writeFileSync(models, MODELS_YAML);
  const prompt = join(home, "work.md");
  writeFileSync(prompt, "You are the work agent.\n");
  return { home, models, prompt };
}

const NOW = new Date("2026-12-01T09:00:00.000Z");

describe("Fisher's exact test", () => {
  it("gives the textbook two-sided p-values", () => {
    // R: fisher.test(matrix(c(3,1,1,3), 2))$p.value = 0.4857; matrix(c(1,11,9,3), 2): 0.002759
    expect(fisherExact(3, 1, 1, 3).p).toBeCloseTo(0.485714, 5);
    expect(fisherExact(1, 9, 11, 3).p).toBeCloseTo(0.0027594, 6);
    expect(fisherExact(5, 5, 5, 5).p).toBeCloseTo(1, 10);
    expect(fisherExact(0, 0, 4, 4).p).toBe(1);
  });
});

describe("scifi evolve on a corpus where one model fails its rank and another does not", () => {
  let c: Corpus;
  let result: EvolveResult;
  beforeAll(async () => {
    c = corpus();
    result = await evolve({ home: c.home, modelsFile: c.models, promptFile: c.prompt, now: NOW });
  });

  it("counts per model, rank and role: passes, runs, iterations to pass, tools, cache", () => {
    const work = (entry: string) => result.stats.models.find((m) => m.entry === entry && m.role === "work");
    const weak = work("scripted-weak");
    expect(weak?.scripted).toBe(true);
    expect(weak?.workPasses).toEqual({ n: 34, passes: 2 });
    expect(weak?.wholeRuns).toEqual({ n: 12, passes: 2 });
    expect(weak?.iterationsToPass).toEqual({ mean: 2, median: 2 });
    // Three tool results per pass reach the tape (the last step's never does): 2 failed, 1 refused.
    expect(weak?.tools).toEqual({ results: 102, failures: 68, allowlistRejections: 34, runnerRejections: 0 });
    expect(weak?.toolFailureRate).toBeCloseTo(2 / 3, 10);
    expect(weak?.allowlistRejectionRate).toBeCloseTo(1 / 3, 10);
    expect(work("scripted-steady")?.workPasses).toEqual({ n: 15, passes: 12 });
    expect(work("scripted-peer")?.workPasses).toEqual({ n: 14, passes: 12 });
    expect(work("scripted-steady")?.iterationsToPass).toEqual({ mean: 1.25, median: 1 });
    const review = result.stats.models.find((m) => m.entry === "scripted-weak" && m.role === "review");
    expect(review?.review).toEqual({
      verdictsWithChecks: 34,
      failedWhatChecksPassed: 0,
      passedWhatChecksFailed: 0,
    });
    expect(weak?.cacheReadShare).toBeGreaterThan(0);
    expect(result.stats.runs).toBe(12 + 12 + 12 + 4);
    const rtl = result.stats.groups.find((g) => g.group === "rtl");
    expect(rtl?.failingChecks[0]).toMatchObject({
      task: "counter",
      check: "root/check-1",
      failures: 32 + 3 + 2 + 4,
    });
  });

  it("proposes to demote the failing model, with its counts and p-value, and nothing for the indistinguishable one", () => {
    const rank = result.proposals.filter((p) =>
      ["demote", "promote", "drop", "prefer"].includes(p.proposal.kind),
    );
    expect(rank).toHaveLength(1);
    const demote = rank[0]?.proposal;
    expect(demote?.kind).toBe("demote");
    expect(demote?.title).toBe("move scripted-weak down from rank 2 to rank 1");
    const test = demote?.evidence.test;
    expect(test?.a).toEqual({ label: "scripted-weak at rank 2", passes: 2, fails: 32 });
    expect(test?.b.passes).toBe(24);
    expect(test?.b.fails).toBe(5);
    expect(test?.p).toBeCloseTo(fisherExact(2, 32, 24, 5).p, 12);
    expect(test?.p).toBeLessThan(1e-8);
    expect(test?.alpha).toBeCloseTo(0.05 / 3, 12);
    expect(demote?.evidence.runs).toHaveLength(12);
    expect(demote?.change?.diff).toContain("-    rank: 2\n+    rank: 1\n");
    // The indistinguishable model: named as such, no proposal.
    const steady = result.comparisons.find((x) => x.entry === "scripted-steady");
    expect(steady?.text).toMatch(/^not enough evidence: 12\/15 .* p = 1\.0000/);
    expect(result.proposals.some((p) => p.proposal.title.includes("scripted-steady"))).toBe(false);
    expect(result.comparisons.find((x) => x.entry === "scripted-small")?.text).toContain(
      "7 work passes at rank 1",
    );
  });

  it("proposes a skill for the recurring failing check, pointing at scifi make-skill", () => {
    const skill = result.proposals.find((p) => p.proposal.kind === "skill")?.proposal;
    expect(skill?.command?.slice(0, 2)).toEqual(["scifi", "make-skill"]);
    expect(skill?.command).toHaveLength(2 + 5);
    // weak 12, steady 3 (late), peer 2 (late), small 2 (late and failing) runs.
    expect(skill?.evidence.numbers.runsFailed).toBe(12 + 3 + 2 + 2);
  });

  it("shows hostile run text escaped, in the listing and in the prompt change", () => {
    const text = renderResult(result);
    expect(text).toContain("\\x1b[8m hidden\\x1b[0m\\rOK: all good\\u{202e}");
    expect(text).toContain("\\x1b]0;pwned\\x07");
    for (const raw of ["\x1b", "\r", "\x07", "\u202e"]) expect(text).not.toContain(raw);
    const prompt = result.proposals.find((p) => p.proposal.kind === "prompt")?.proposal;
    // One line of plain Markdown text (inlineText: its marks escaped), reading back as the visible text.
    expect(prompt?.change?.after).toContain(
      `- ${inlineText("The counter wraps one cycle late\x1b]0;pwned\x07")} (12 runs)`,
    );
    for (const raw of ["\x1b", "\x07"]) expect(prompt?.change?.after).not.toContain(raw);
  });

  it("writes the proposals to evolve/<id>.json and changes nothing by itself", () => {
    expect(readFileSync(c.models, "utf8")).toBe(MODELS_YAML);
    expect(readFileSync(c.prompt, "utf8")).toBe("You are the work agent.\n");
    const stored = listStored(c.home);
    expect(stored.map((s) => s.proposal.id).sort()).toEqual(
      result.proposals.map((p) => p.proposal.id).sort(),
    );
    expect(stored.every((s) => s.status === "pending")).toBe(true);
  });

  it("apply changes models.yaml exactly as the diff showed and records who, when and why", async () => {
    const demote = result.proposals.find((p) => p.proposal.kind === "demote")?.proposal;
    if (!demote?.change) throw new Error("no demotion with a change");
    const at = new Date("2026-12-01T10:00:00.000Z");
    const decision = await applyProposal(c.home, demote.id, {
      note: "weak fails rank 2",
      who: "alice",
      now: at,
    });
    const after = readFileSync(c.models, "utf8");
    expect(unifiedDiff(MODELS_YAML, after, "models.yaml")).toBe(demote.change.diff);
    expect(after).toBe(
      MODELS_YAML.replace(
        "model: weak-model\n    baseURL: http://127.0.0.1:9/v1\n    rank: 2",
        "model: weak-model\n    baseURL: http://127.0.0.1:9/v1\n    rank: 1",
      ),
    );
    const config = parseModelsConfig(parse(after));
    expect(config.models.find((m) => m.name === "scripted-weak")?.rank).toBe(1);
    expect(after).toContain("rank: 2 # the workhorse");
    expect(decision).toMatchObject({
      id: demote.id,
      decision: "applied",
      who: "alice",
      at: at.toISOString(),
      note: "weak fails rank 2",
      file: c.models,
    });
    expect(readEvolveDecisions(c.home)).toEqual([decision]);
    expect(appliedProposals(c.home, new Date("2026-12-01T11:00:00.000Z")).map((p) => p.id)).toEqual([
      demote.id,
    ]);
    expect(appliedProposals(c.home, new Date("2026-12-01T09:30:00.000Z"))).toEqual([]);
    await expect(applyProposal(c.home, demote.id, { note: "again" })).rejects.toThrow(
      /already applied by alice/,
    );
    // Evolve again: the decided proposal is not rewritten, and is listed as applied.
    const again = await evolve({ home: c.home, modelsFile: c.models, promptFile: c.prompt, now: NOW });
    expect(again.proposals.find((p) => p.proposal.id === demote.id)?.status).toBe("applied");
  });

  it("apply refuses a file that changed since the proposal, and reject changes nothing", async () => {
    const prompt = result.proposals.find((p) => p.proposal.kind === "prompt")?.proposal;
    if (!prompt) throw new Error("no prompt proposal");
    writeFileSync(c.prompt, "You are the work agent. Edited.\n");
    await expect(applyProposal(c.home, prompt.id, { note: "x" })).rejects.toThrow(/changed since proposal/);
    await expect(applyProposal(c.home, prompt.id, { note: " " })).rejects.toThrow(/needs a note/);
    const decision = rejectProposal(c.home, prompt.id, { note: "not now", who: "bob" });
    expect(decision.decision).toBe("rejected");
    expect(readFileSync(c.prompt, "utf8")).toBe("You are the work agent. Edited.\n");
    expect(readProposal(c.home, prompt.id).id).toBe(prompt.id);
    expect(() => rejectProposal(c.home, "../../etc/passwd", { note: "" })).toThrow(/not a proposal id/);
  });
});

describe("evolve's other inputs", () => {
  it("de-duplicates global memory proposals and ranks them by the runs behind them; apply accepts one", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-evolve-mem-"));
    const file = homePaths(home).globalProposed;
    mkdirSync(join(home, "memory"), { recursive: true });
    const entry = (id: string, runId: string, body: string) =>
      appendEntry(file, {
        id,
        time: "2026-12-01T00:00:00.000Z",
        runId,
        role: "final_review",
        title: "global",
        body,
      });
    await entry("r1/final/global", "r1", "Pin the Verilator version.");
    await entry("r2/final/global", "r2", "pin the  verilator version");
    await entry("r3/final/global", "r3", "Write plots as PDF.");
    const result = await evolve({ home, now: NOW });
    const memory = result.proposals.filter((p) => p.proposal.kind === "memory").map((p) => p.proposal);
    expect(memory.map((m) => m.memory)).toEqual([
      { accept: "r1/final/global", duplicates: ["r2/final/global"] },
      { accept: "r3/final/global", duplicates: [] },
    ]);
    expect(memory[0]?.evidence.runs).toEqual(["r1", "r2"]);
    await applyProposal(home, memory[0]?.id as string, { note: "yes", who: "carol" });
    expect(readFileSync(homePaths(home).globalMemory, "utf8")).toContain("Pin the Verilator version.");
  });

  it("reads eval trials through the contract, and the runs behind them", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-evolve-eval-"));
    const elsewhere = join(home, "eval-runs");
    const dirs = modelRuns("scripted-steady", 2, { passing: 2, late: 0, failing: 1 }).map((r) =>
      writeRun(elsewhere, r),
    );
    const trial = (i: number, status: TrialResult["status"], runDir: string): TrialResult => ({
      version: 1,
      evalId: "e1",
      trialId: `counter.default.steady.r${i}`,
      task: "counter",
      variant: "default",
      model: "scripted:steady.yaml",
      scripted: true,
      repeat: i,
      status,
      verdict: status === "pass" ? "PASSED" : "FAILED",
      exitCode: status === "pass" ? 0 : 1,
      cause: "",
      iterations: 1,
      wallMs: 1000,
      tokens: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      cacheReadShare: 0,
      usd: 0,
      toolCalls: 4,
      toolRejections: 1,
      approvalsWaited: 0,
      runId: `r${i}`,
      runDir,
      startedAt: "2026-12-01T00:00:00.000Z",
      endedAt: "2026-12-01T00:01:00.000Z",
    });
    const statuses: TrialResult["status"][] = ["pass", "pass", "fail"];
    for (const [i, dir] of dirs.entries()) {
      const folder = join(home, "evals", "e1", "trials", `t${i}`);
      mkdirSync(folder, { recursive: true });
      writeFileSync(
        join(folder, "result.json"),
        JSON.stringify(trial(i, statuses[i] as TrialResult["status"], dir)),
      );
    }
    mkdirSync(join(home, "evals", "e1", "trials", "bad"), { recursive: true });
    writeFileSync(join(home, "evals", "e1", "trials", "bad", "result.json"), JSON.stringify({ version: 2 }));
    const comparison = {
      a: "scripted:steady.yaml",
      b: "scripted:peer.yaml",
      cells: 1,
      meanDifference: 0,
      ci95: [-0.5, 0.5],
      better: "not distinguishable",
      text: "not distinguishable with 3 repeats\x1b[8m",
      method: "paired",
    };
    writeFileSync(
      join(home, "evals", "e1", "summary.json"),
      JSON.stringify({ version: 1, evalId: "e1", comparisons: [comparison] }),
    );
    const result = await evolve({ home, evals: ["e1"], now: NOW, write: false });
    expect(result.evalComparisons).toEqual([{ ...comparison, evalId: "e1" }]);
    expect(renderResult(result)).toContain(
      "e1: scripted:steady.yaml against scripted:peer.yaml over 1 cells: not distinguishable with 3 repeats\\x1b[8m",
    );
    expect(result.evals).toEqual([
      expect.objectContaining({
        evalId: "e1",
        model: "scripted:steady.yaml",
        scripted: true,
        trials: 3,
        passes: 2,
        fails: 1,
        toolRejections: 3,
      }),
    ]);
    expect(result.evalProblems).toHaveLength(1);
    expect(result.stats.runs).toBe(3);
    await expect(evolve({ home, evals: ["nope"], write: false })).rejects.toThrow(/no eval 'nope'/);
  });

  it("a model summarises recurring findings for the prompt proposal, labelled scripted", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-evolve-sum-"));
    for (const run of modelRuns(
      "scripted-weak",
      2,
      { passing: 0, late: 0, failing: 3 },
      { finding: "forgot the reset" },
    ))
      writeRun(homePaths(home).runs, run);
    const script = join(home, "summary.yaml");
    writeFileSync(
      script,
      `evolve:\n  - expect: "forgot the reset"\n    text: "- Test the reset before you report done."\n`,
    );
    const prompt = join(home, "work.md");
    writeFileSync(prompt, "You are the work agent.\n");
    const session = await openHelperSession({ home, helper: "evolve", modelSpec: `scripted:${script}` });
    try {
      const result = await evolve({
        home,
        promptFile: prompt,
        now: NOW,
        summarise: (f) => summariseFindings(session, f),
      });
      const p = result.proposals.find((x) => x.proposal.kind === "prompt")?.proposal;
      expect(p?.summarisedBy).toEqual({ model: "scripted-summary", scripted: true });
      expect(p?.change?.after).toContain("summarised by the SCRIPTED model scripted-summary");
      expect(p?.change?.after).toContain("- Test the reset before you report done.");
      // The helper's own run folder (its tape) is no loop run: not counted.
      expect(result.stats.runs).toBe(3);
    } finally {
      await session.close();
    }
  });
});

describe("two models at a rank, and the models.yaml edits", () => {
  it("with one peer, the model short of the rank is demoted (not its peer promoted)", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-evolve-two-"));
    for (const run of [
      ...modelRuns("scripted-weak", 2, { passing: 0, late: 2, failing: 10 }),
      ...modelRuns("scripted-steady", 2, { passing: 9, late: 3, failing: 0 }),
    ])
      writeRun(homePaths(home).runs, run);
    writeFileSync(join(home, "models.yaml"), MODELS_YAML);
    const result = await evolve({ home, write: false, promptFile: join(home, "none.md") });
    expect(
      result.proposals
        .filter((p) => p.proposal.kind !== "skill" && p.proposal.kind !== "prompt")
        .map((p) => p.proposal.title),
    ).toEqual(["move scripted-weak down from rank 2 to rank 1"]);
  });

  it("a model that never passes at rank 1 is proposed for removal, its lines and only those", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-evolve-drop-"));
    for (const run of [
      ...modelRuns("scripted-small", 1, { passing: 0, late: 0, failing: 4 }),
      ...modelRuns("scripted-peer", 1, { passing: 8, late: 1, failing: 0 }),
    ])
      writeRun(homePaths(home).runs, run);
    writeFileSync(join(home, "models.yaml"), MODELS_YAML);
    const result = await evolve({ home, write: false, promptFile: join(home, "none.md") });
    const drop = result.proposals.find((p) => p.proposal.kind === "drop")?.proposal;
    expect(drop?.title).toBe(
      "drop scripted-small from models.yaml (it never passes at rank 1, the lowest rank)",
    );
    expect(drop?.evidence.test).toMatchObject({ a: { passes: 0, fails: 12 }, b: { passes: 9, fails: 1 } });
    const after = drop?.change?.after ?? "";
    expect(after).toBe(removeModel(MODELS_YAML, "scripted-small"));
    expect(after.startsWith("# the lab's models\nmodels:\n  - name: scripted-weak\n")).toBe(true);
    expect(parseModelsConfig(parse(after)).models.map((m) => m.name)).toEqual([
      "scripted-weak",
      "scripted-steady",
      "scripted-peer",
    ]);
    expect(() =>
      removeModel(
        "models:\n  - name: a\n    provider: openai\n    model: m\n    rank: 1\n    prices: { input: 0, output: 0 }\n",
        "a",
      ),
    ).toThrow(/only model/);
  });
});

describe("cost and the review", () => {
  it("prefers a cheaper model that passes as often, and counts a review that failed what checks passed", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-evolve-cost-"));
    for (const run of [
      ...modelRuns("scripted-steady", 2, { passing: 10, late: 0, failing: 0 }, { usdPerCall: 0.001 }),
      ...modelRuns("scripted-peer", 2, { passing: 9, late: 1, failing: 0 }, { usdPerCall: 0.01 }),
      ...modelRuns(
        "scripted-weak",
        1,
        { passing: 0, late: 2, failing: 0 },
        { reviewFailsPassingChecks: true },
      ),
    ])
      writeRun(homePaths(home).runs, run);
    writeFileSync(join(home, "models.yaml"), MODELS_YAML);
    const result = await evolve({ home, write: false, promptFile: join(home, "none.md") });
    const prefer = result.proposals.filter((p) => p.proposal.kind === "prefer").map((p) => p.proposal);
    expect(prefer.map((p) => p.title)).toEqual([
      "prefer scripted-steady to scripted-peer at rank 2: drop scripted-peer",
    ]);
    expect(prefer[0]?.evidence.test).toMatchObject({
      a: { passes: 10, fails: 0 },
      b: { passes: 10, fails: 1 },
      significant: false,
    });
    expect(prefer[0]?.change?.after).toBe(removeModel(MODELS_YAML, "scripted-peer"));
    // Six calls a pass (pre-scan, four work, review): USD per pass of the work calls alone.
    const steady = result.stats.models.find((m) => m.entry === "scripted-steady" && m.role === "work");
    expect(steady?.usdPerPass).toBeCloseTo(0.004, 10);
    const review = result.stats.models.find((m) => m.entry === "scripted-weak" && m.role === "review");
    // Each late run: iteration 1 the review failed a node whose check passed, iteration 2 agreed.
    expect(review?.review).toEqual({
      verdictsWithChecks: 4,
      failedWhatChecksPassed: 2,
      passedWhatChecksFailed: 0,
    });
  });
});
