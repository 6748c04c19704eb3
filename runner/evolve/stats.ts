// The statistics of `scifi evolve`, computed from run facts (run-facts.ts) without a model: per
// model (models-config entry), rank and role the pass rates, spend and behaviour; per task group the
// checks that fail again and again. Deterministic: the same runs give the same numbers, in the same
// order (sorted keys), whatever order the folders were read in.
import type { RunFacts } from "./run-facts.ts";

export interface Counts {
  n: number;
  passes: number;
}

export interface ModelStats {
  entry: string;
  provider: string;
  model: string;
  rank: number;
  role: string;
  scripted: boolean;
  runs: string[];
  calls: number;
  failedCalls: number;
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number };
  usd: number;
  /** cacheRead / (input + cacheRead + cacheWrite); 0 without input. */
  cacheReadShare: number;
  /** role work: the passes this model did at this rank (a pass is charged to its main work model). */
  workPasses?: Counts;
  /** role work: runs whose work this model did most of, at this rank, with an outcome. */
  wholeRuns?: Counts;
  /** role work: of those runs (with an outcome), how many had integrity events (docs/integrity.md). */
  integrityRuns?: { n: number; withEvents: number };
  /** role work: iterations of the passed runs among wholeRuns (mean, median); null when none passed. */
  iterationsToPass?: { mean: number; median: number } | null;
  /** role work: usd and tokens of this model's work calls per passing work pass; null when none passed. */
  usdPerPass?: number | null;
  tokensPerPass?: number | null;
  /** role work: the tool results this model asked for. */
  tools?: { results: number; failures: number; allowlistRejections: number; runnerRejections: number };
  toolFailureRate?: number;
  allowlistRejectionRate?: number;
  /** role work: passes that ended on a blocker. */
  blockers?: number;
  /** role review: verdicts on nodes with checks, and how often the review and the checks disagreed. */
  review?: { verdictsWithChecks: number; failedWhatChecksPassed: number; passedWhatChecksFailed: number };
}

export interface RecurringCheck {
  group: string;
  task: string;
  check: string;
  /** Runs in which it failed at least once, and how many runs of the task there were. */
  runsFailed: string[];
  runsOfTask: number;
  failures: number;
  /** The last (up to 3) output tails, newest last. Hostile text: escape where shown. */
  tails: string[];
}

export interface GroupStats {
  group: string;
  runs: number;
  passed: number;
  failingChecks: RecurringCheck[];
}

export interface RecurringFinding {
  /** The finding as first written. Hostile text. */
  text: string;
  runs: string[];
  count: number;
}

export interface EvolveStats {
  runs: number;
  /** Runs with an outcome (passed, failed, blocked). */
  ended: number;
  scriptedRuns: number;
  models: ModelStats[];
  groups: GroupStats[];
  findings: RecurringFinding[];
}

const key = (...parts: (string | number)[]) => parts.join("\0");

function ratio(a: number, b: number): number {
  return b === 0 ? 0 : a / b;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Findings that differ only in case, whitespace and trailing punctuation are one finding. */
export function normalText(text: string): string {
  return text
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/[\s.!;:,]+$/, "")
    .trim();
}

export function computeStats(facts: RunFacts[]): EvolveStats {
  const runs = [...facts].sort((a, b) => a.runId.localeCompare(b.runId));
  const models = new Map<string, ModelStats>();
  const stat = (entry: string, rank: number, role: string, provider: string, model: string): ModelStats => {
    const k = key(entry, rank, role);
    let s = models.get(k);
    if (!s) {
      s = {
        entry,
        provider,
        model,
        rank,
        role,
        scripted: provider === "scripted",
        runs: [],
        calls: 0,
        failedCalls: 0,
        tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        usd: 0,
        cacheReadShare: 0,
      };
      if (role === "work") {
        s.workPasses = { n: 0, passes: 0 };
        s.wholeRuns = { n: 0, passes: 0 };
        s.integrityRuns = { n: 0, withEvents: 0 };
        s.tools = { results: 0, failures: 0, allowlistRejections: 0, runnerRejections: 0 };
        s.blockers = 0;
      }
      if (role === "review")
        s.review = { verdictsWithChecks: 0, failedWhatChecksPassed: 0, passedWhatChecksFailed: 0 };
      models.set(k, s);
    }
    return s;
  };
  const passedIterations = new Map<string, number[]>();
  const groups = new Map<string, { runs: number; passed: number; checks: Map<string, RecurringCheck> }>();
  const taskRuns = new Map<string, number>();
  const findings = new Map<string, RecurringFinding>();

  for (const run of runs) {
    const lastRun = (s: ModelStats) => {
      if (s.runs[s.runs.length - 1] !== run.runId) s.runs.push(run.runId);
    };
    const providers = new Map<string, { provider: string; model: string }>();
    for (const u of run.usage) {
      providers.set(u.entry, { provider: u.provider, model: u.model });
      const s = stat(u.entry, u.rank, u.role, u.provider, u.model);
      lastRun(s);
      s.calls += u.calls;
      s.failedCalls += u.failedCalls;
      s.tokens.input += u.input;
      s.tokens.output += u.output;
      s.tokens.cacheRead += u.cacheRead;
      s.tokens.cacheWrite += u.cacheWrite;
      s.usd += u.usd;
    }
    const who = (entry: string) => providers.get(entry) ?? { provider: "unknown", model: entry };
    const workOf = (entry: string, rank: number) => {
      const w = who(entry);
      return stat(entry, rank, "work", w.provider, w.model);
    };
    const runShare = new Map<string, number>();
    for (const pass of run.passes) {
      const s = workOf(pass.entry, pass.rank);
      lastRun(s);
      (s.workPasses as Counts).n++;
      if (pass.passed) (s.workPasses as Counts).passes++;
      if (pass.blocked) s.blockers = (s.blockers ?? 0) + 1;
      runShare.set(key(pass.entry, pass.rank), (runShare.get(key(pass.entry, pass.rank)) ?? 0) + 1);
      if (pass.reviewEntry !== undefined && pass.hadChecks) {
        const w = who(pass.reviewEntry);
        const r = stat(pass.reviewEntry, pass.reviewRank ?? 0, "review", w.provider, w.model);
        const review = r.review as NonNullable<ModelStats["review"]>;
        review.verdictsWithChecks++;
        if (pass.checksPassed && !pass.reviewSaidPass) review.failedWhatChecksPassed++;
        if (!pass.checksPassed && pass.reviewSaidPass) review.passedWhatChecksFailed++;
      }
    }
    for (const t of run.tools) {
      const s = workOf(t.entry, t.rank);
      const tools = s.tools as NonNullable<ModelStats["tools"]>;
      tools.results += t.results;
      tools.failures += t.failures;
      tools.allowlistRejections += t.allowlistRejections;
      tools.runnerRejections += t.runnerRejections;
    }
    // The whole run is charged to the model (and rank) that did most of its passes.
    let main: string | undefined;
    for (const [k, n] of runShare) if (main === undefined || n > (runShare.get(main) ?? 0)) main = k;
    if (main !== undefined && run.outcome !== "running") {
      const [entry, rank] = main.split("\0") as [string, string];
      const s = workOf(entry, Number(rank));
      (s.wholeRuns as Counts).n++;
      const integrity = s.integrityRuns as NonNullable<ModelStats["integrityRuns"]>;
      integrity.n++;
      if (run.integrityEvents > 0) integrity.withEvents++;
      if (run.outcome === "passed") {
        (s.wholeRuns as Counts).passes++;
        passedIterations.set(main, [...(passedIterations.get(main) ?? []), run.iterations]);
      }
    }

    const group = run.group ?? "(no group)";
    const g = groups.get(group) ?? { runs: 0, passed: 0, checks: new Map() };
    groups.set(group, g);
    g.runs++;
    if (run.outcome === "passed") g.passed++;
    taskRuns.set(key(group, run.task), (taskRuns.get(key(group, run.task)) ?? 0) + 1);
    for (const f of run.failingChecks) {
      const k = key(run.task, f.check);
      const c = g.checks.get(k) ?? {
        group,
        task: run.task,
        check: f.check,
        runsFailed: [],
        runsOfTask: 0,
        failures: 0,
        tails: [],
      };
      g.checks.set(k, c);
      c.failures++;
      if (c.runsFailed[c.runsFailed.length - 1] !== run.runId) c.runsFailed.push(run.runId);
      c.tails.push(f.output);
      if (c.tails.length > 3) c.tails.shift();
    }
    for (const text of run.findings) {
      const k = normalText(text);
      if (k === "") continue;
      const f = findings.get(k) ?? { text, runs: [], count: 0 };
      findings.set(k, f);
      f.count++;
      if (f.runs[f.runs.length - 1] !== run.runId) f.runs.push(run.runId);
    }
  }

  for (const [k, s] of models) {
    const input = s.tokens.input + s.tokens.cacheRead + s.tokens.cacheWrite;
    s.cacheReadShare = ratio(s.tokens.cacheRead, input);
    if (s.role !== "work") continue;
    const passes = (s.workPasses as Counts).passes;
    const total = s.tokens.input + s.tokens.output + s.tokens.cacheRead + s.tokens.cacheWrite;
    s.usdPerPass = passes === 0 ? null : s.usd / passes;
    s.tokensPerPass = passes === 0 ? null : total / passes;
    const iterations = passedIterations.get(k.split("\0").slice(0, 2).join("\0")) ?? [];
    s.iterationsToPass =
      iterations.length === 0
        ? null
        : { mean: iterations.reduce((a, b) => a + b, 0) / iterations.length, median: median(iterations) };
    const tools = s.tools as NonNullable<ModelStats["tools"]>;
    s.toolFailureRate = ratio(tools.failures, tools.results);
    s.allowlistRejectionRate = ratio(tools.allowlistRejections, tools.results);
  }

  return {
    runs: runs.length,
    ended: runs.filter((r) => r.outcome !== "running").length,
    scriptedRuns: runs.filter((r) => r.scripted).length,
    models: [...models.values()].sort(
      (a, b) => a.role.localeCompare(b.role) || a.rank - b.rank || a.entry.localeCompare(b.entry),
    ),
    groups: [...groups.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([group, g]) => ({
        group,
        runs: g.runs,
        passed: g.passed,
        failingChecks: [...g.checks.values()]
          .map((c) => ({ ...c, runsOfTask: taskRuns.get(key(group, c.task)) ?? 0 }))
          .sort((a, b) => b.runsFailed.length - a.runsFailed.length || a.check.localeCompare(b.check)),
      })),
    findings: [...findings.values()].sort(
      (a, b) => b.runs.length - a.runs.length || a.text.localeCompare(b.text),
    ),
  };
}
