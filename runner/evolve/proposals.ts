// Proposals from the statistics, each with its evidence: the numbers, the runs behind them and,
// for a rank change, Fisher's exact test on the pass counts. Nothing here changes a file: a
// proposal carries the change (the file's text after it, the diff, the hash of the text it was
// computed on) for a person to apply with `scifi evolve apply` (store.ts).
//
// Rank tests, per rank of work passes: each model with enough passes is tested against the other
// models of its rank pooled; the one furthest off (lowest p) is proposed to move when p is below
// alpha / (models tested at that rank) (Bonferroni), then taken out of the pool, and the rest are
// tested again without it, until none differs. So one bad model does not make its peers look good.
// The same test on the runs with integrity events (docs/integrity.md) proposes a demotion too.
// (Just over 500 lines: every proposal builder shares base, withChange and the evidence shape here.)

import { inlineText } from "../markdown-quote.ts";
import { sha256 } from "../sha256.ts";
import { visible } from "../terminal-text.ts";
import { appendBlock, EditError, removeModel, setRank, unifiedDiff } from "./edit.ts";
import { fisherExact } from "./fisher.ts";
import { type EvolveStats, type ModelStats, normalText, type RecurringFinding } from "./stats.ts";

export const PROPOSAL_KINDS = ["demote", "promote", "drop", "prefer", "skill", "memory", "prompt"] as const;
export type ProposalKind = (typeof PROPOSAL_KINDS)[number];

export interface FisherEvidence {
  test: "Fisher's exact test, two-sided";
  a: { label: string; passes: number; fails: number };
  b: { label: string; passes: number; fails: number };
  p: number;
  /** The threshold p was compared with (alpha, divided by the number of models tested at the rank). */
  alpha: number;
  significant: boolean;
}

export interface FileChange {
  /** Absolute path of the file, and how the diff names it. */
  file: string;
  label: string;
  /** SHA-256 of the text the change was computed on: apply refuses a file that changed since. */
  beforeSha256: string;
  /** The whole text after the change: apply writes exactly this. */
  after: string;
  diff: string;
}

export interface EvolveProposal {
  version: 1;
  id: string;
  kind: ProposalKind;
  createdAt: string;
  /** Built from names that came from runs and configs: escape where shown. */
  title: string;
  reason: string;
  evidence: {
    numbers: Record<string, number | string | null>;
    runs: string[];
    test?: FisherEvidence;
  };
  /** The file change apply makes; absent when there is nothing to write (a skill, a memory accept). */
  change?: FileChange;
  /** Why a change could not be computed (the model is not in models.yaml, ...). */
  noChange?: string;
  /** A command the proposal points at (`scifi make-skill RUN...`). */
  command?: string[];
  /** memory: the global memory proposal accepted on apply, and its duplicates (left as they are). */
  memory?: { accept: string; duplicates: string[] };
  /** prompt: the model that summarised the findings, labelled scripted when it was. */
  summarisedBy?: { model: string; scripted: boolean };
}

/** Verdicts that produced no proposal, said as such. */
export interface Comparison {
  entry: string;
  rank: number;
  text: string;
  test?: FisherEvidence;
}

export interface ProposalInputs {
  stats: EvolveStats;
  /** The models config, when there is one: rank changes are computed on its text. */
  models?: { file: string; text: string };
  /** The work agent's prompt file, which a prompt proposal appends to. */
  prompt?: { file: string; text: string };
  /** Pending global memory proposals (runner/memory/proposals.ts). */
  memory?: { id: string; title: string; meta: string; body: string }[];
  /** A summary of the recurring findings by a model (summarise.ts), and the model that wrote it. */
  findingsSummary?: { text: string; model: string; scripted: boolean };
  now?: Date;
  alpha?: number;
  /** Work passes a model needs at a rank before it is tested. */
  minPasses?: number;
  /** Runs a failure or finding must recur in. */
  minRuns?: number;
}

export const DEFAULTS = { alpha: 0.05, minPasses: 8, minRuns: 3 };

const slug = (text: string) => text.replace(/[^A-Za-z0-9._-]+/g, "-").slice(0, 40) || "x";

function proposalId(kind: ProposalKind, target: string, identity: string): string {
  return `${kind}-${slug(target)}-${sha256(`${kind}\0${target}\0${identity}`).slice(0, 8)}`;
}

const rate = (c: { n: number; passes: number }) => (c.n === 0 ? 0 : c.passes / c.n);
const pct = (c: { n: number; passes: number }) => `${c.passes}/${c.n} (${(rate(c) * 100).toFixed(0)} %)`;

export function buildProposals(inputs: ProposalInputs): {
  proposals: EvolveProposal[];
  comparisons: Comparison[];
} {
  const o = { ...DEFAULTS, ...definedOf(inputs) };
  const createdAt = (inputs.now ?? new Date()).toISOString();
  const proposals: EvolveProposal[] = [];
  const comparisons: Comparison[] = [];
  const base = (kind: ProposalKind, target: string, identity: string) => ({
    version: 1 as const,
    id: proposalId(kind, target, identity),
    kind,
    createdAt,
  });

  const work = inputs.stats.models.filter((m) => m.role === "work" && m.workPasses);
  for (const rank of [...new Set(work.map((m) => m.rank))].sort((a, b) => a - b)) {
    const atRank = work.filter((m) => m.rank === rank);
    const pool = atRank.filter((m) => (m.workPasses?.n ?? 0) >= o.minPasses);
    for (const m of atRank.filter((x) => !pool.includes(x)))
      comparisons.push({
        entry: m.entry,
        rank,
        text: `not enough evidence: ${m.workPasses?.n ?? 0} work passes at rank ${rank} (${o.minPasses} needed to test)`,
      });
    if (pool.length === 1) {
      const m = pool[0] as ModelStats;
      comparisons.push({
        entry: m.entry,
        rank,
        text: `not enough evidence: no other model at rank ${rank} to compare with`,
      });
    }
    const tested = pool.length;
    const threshold = tested > 0 ? o.alpha / tested : o.alpha;
    const remaining = [...pool];
    while (remaining.length >= 2) {
      const tests = remaining.map((m) => ({ m, test: testAgainstPeers(m, remaining, threshold) }));
      // Equal p (two models: one test, seen from both sides): the one below the rest goes first, so
      // the proposal is the demotion of the model short of its rank, not the promotion of its peer.
      tests.sort(
        (a, b) =>
          pOrder(a.test.p, b.test.p) ||
          Number(isBetter(a.test)) - Number(isBetter(b.test)) ||
          a.m.entry.localeCompare(b.m.entry),
      );
      const first = tests[0] as (typeof tests)[number];
      if (!first.test.significant) {
        for (const { m, test } of tests)
          comparisons.push({
            entry: m.entry,
            rank,
            text: `not enough evidence: ${pct(m.workPasses as { n: number; passes: number })} against ${pct({ n: test.b.passes + test.b.fails, passes: test.b.passes })} for the rest of rank ${rank}, p = ${fmtP(test.p)} (needs < ${fmtP(threshold)})`,
            test,
          });
        break;
      }
      proposals.push(rankProposal(first.m, first.test, inputs, base));
      remaining.splice(remaining.indexOf(first.m), 1);
    }
    proposals.push(...preferProposals(remaining, inputs, base, o.alpha));
    proposals.push(...integrityProposals(atRank, inputs, base, o));
  }

  for (const group of inputs.stats.groups)
    for (const check of group.failingChecks) {
      if (check.runsFailed.length < o.minRuns) continue;
      const runs = check.runsFailed.slice(-5);
      proposals.push({
        ...base("skill", `${check.task}-${check.check}`, `${group.group}\0${check.task}\0${check.check}`),
        title: `write a skill for the recurring failure of check ${check.check} of task ${check.task} (group ${group.group})`,
        reason: `check ${check.check} failed in ${check.runsFailed.length} of ${check.runsOfTask} runs of ${check.task}: a skill that says how to get it right would save those iterations. Draft one from the runs with the command below (a person reviews the draft in skills/drafts/).`,
        evidence: {
          numbers: {
            runsFailed: check.runsFailed.length,
            runsOfTask: check.runsOfTask,
            failures: check.failures,
          },
          runs: check.runsFailed,
        },
        command: ["scifi", "make-skill", ...runs],
        noChange: `nothing is written: 'scifi make-skill ${runs.join(" ")}' drafts the skill`,
      });
    }

  proposals.push(...memoryProposals(inputs.memory ?? [], base));
  const recurring = inputs.stats.findings.filter((f) => f.runs.length >= o.minRuns);
  if (recurring.length > 0) proposals.push(promptProposal(recurring, inputs, base));
  return { proposals, comparisons };
}

function definedOf(inputs: ProposalInputs) {
  const out: Partial<typeof DEFAULTS> = {};
  if (inputs.alpha !== undefined) out.alpha = inputs.alpha;
  if (inputs.minPasses !== undefined) out.minPasses = inputs.minPasses;
  if (inputs.minRuns !== undefined) out.minRuns = inputs.minRuns;
  return out;
}

export function fmtP(p: number): string {
  return p < 0.0001 ? p.toExponential(2) : p.toFixed(4);
}

/** p-values equal up to rounding (the same table seen from either side) order as equal. */
function pOrder(a: number, b: number): number {
  return Math.abs(a - b) <= 1e-9 * Math.max(a, b) ? 0 : a - b;
}

function isBetter(t: FisherEvidence): boolean {
  return t.a.passes / Math.max(1, t.a.passes + t.a.fails) > t.b.passes / Math.max(1, t.b.passes + t.b.fails);
}

function testAgainstPeers(m: ModelStats, pool: ModelStats[], threshold: number): FisherEvidence {
  const own = m.workPasses as { n: number; passes: number };
  const rest = pool
    .filter((x) => x !== m)
    .reduce(
      (acc, x) => ({ n: acc.n + (x.workPasses?.n ?? 0), passes: acc.passes + (x.workPasses?.passes ?? 0) }),
      { n: 0, passes: 0 },
    );
  const { p } = fisherExact(own.passes, own.n - own.passes, rest.passes, rest.n - rest.passes);
  return {
    test: "Fisher's exact test, two-sided",
    a: { label: `${m.entry} at rank ${m.rank}`, passes: own.passes, fails: own.n - own.passes },
    b: {
      label: `the other models at rank ${m.rank} (${pool
        .filter((x) => x !== m)
        .map((x) => x.entry)
        .join(", ")})`,
      passes: rest.passes,
      fails: rest.n - rest.passes,
    },
    p,
    alpha: threshold,
    significant: p < threshold,
  };
}

type Base = (
  kind: ProposalKind,
  target: string,
  identity: string,
) => Pick<EvolveProposal, "version" | "id" | "kind" | "createdAt">;

function modelNumbers(m: ModelStats): Record<string, number | string | null> {
  return {
    workPasses: m.workPasses?.n ?? 0,
    passedPasses: m.workPasses?.passes ?? 0,
    passRate: rate(m.workPasses ?? { n: 0, passes: 0 }),
    runs: m.wholeRuns?.n ?? 0,
    passedRuns: m.wholeRuns?.passes ?? 0,
    usdPerPass: m.usdPerPass ?? null,
    tokensPerPass: m.tokensPerPass ?? null,
    toolFailureRate: m.toolFailureRate ?? 0,
    allowlistRejectionRate: m.allowlistRejectionRate ?? 0,
    blockers: m.blockers ?? 0,
    cacheReadShare: m.cacheReadShare,
  };
}

function rankProposal(
  m: ModelStats,
  test: FisherEvidence,
  inputs: ProposalInputs,
  base: Base,
): EvolveProposal {
  const worse =
    rate(m.workPasses as { n: number; passes: number }) <
    test.b.passes / Math.max(1, test.b.passes + test.b.fails);
  const kind: ProposalKind = !worse
    ? "promote"
    : m.workPasses?.passes === 0 || m.rank <= 1
      ? "drop"
      : "demote";
  const to = kind === "promote" ? m.rank + 1 : m.rank - 1;
  const what =
    kind === "drop"
      ? `drop ${m.entry} from models.yaml (it ${m.workPasses?.passes === 0 ? "never passes" : "fails"} at rank ${m.rank}${m.rank <= 1 ? ", the lowest rank" : ""})`
      : `move ${m.entry} ${kind === "promote" ? "up" : "down"} from rank ${m.rank} to rank ${to}`;
  const stated = `${test.a.passes}/${test.a.passes + test.a.fails} work passes passed, against ${test.b.passes}/${test.b.passes + test.b.fails} for ${test.b.label}; p = ${fmtP(test.p)} < ${fmtP(test.alpha)}`;
  const proposal: EvolveProposal = {
    ...base(kind, m.entry, `${m.entry}\0${m.rank}\0${kind}`),
    title: what,
    reason: `${m.entry} ${worse ? "passes less often" : "passes more often"} than the other models of rank ${m.rank}: ${stated}.${m.scripted ? " (SCRIPTED model: the numbers come from scripted runs.)" : ""}`,
    evidence: { numbers: modelNumbers(m), runs: m.runs, test },
  };
  return withChange(proposal, inputs.models, (text) =>
    kind === "drop" ? removeModel(text, m.entry) : setRank(text, m.entry, to),
  );
}

function preferProposals(
  pool: ModelStats[],
  inputs: ProposalInputs,
  base: Base,
  alpha: number,
): EvolveProposal[] {
  const out: EvolveProposal[] = [];
  for (const dear of pool)
    for (const cheap of pool) {
      if (cheap === dear || cheap.usdPerPass == null || dear.usdPerPass == null || dear.usdPerPass <= 0)
        continue;
      if (cheap.usdPerPass > 0.8 * dear.usdPerPass) continue;
      const c = cheap.workPasses as { n: number; passes: number };
      const d = dear.workPasses as { n: number; passes: number };
      if (rate(c) < rate(d)) continue;
      const { p } = fisherExact(c.passes, c.n - c.passes, d.passes, d.n - d.passes);
      if (p < alpha) continue;
      const test: FisherEvidence = {
        test: "Fisher's exact test, two-sided",
        a: { label: `${cheap.entry} at rank ${cheap.rank}`, passes: c.passes, fails: c.n - c.passes },
        b: { label: `${dear.entry} at rank ${dear.rank}`, passes: d.passes, fails: d.n - d.passes },
        p,
        alpha,
        significant: false,
      };
      const proposal: EvolveProposal = {
        ...base(
          "prefer",
          `${cheap.entry}-over-${dear.entry}`,
          `${cheap.entry}\0${dear.entry}\0${cheap.rank}`,
        ),
        title: `prefer ${cheap.entry} to ${dear.entry} at rank ${dear.rank}: drop ${dear.entry}`,
        reason: `${cheap.entry} passes as often (${pct(c)} against ${pct(d)}, p = ${fmtP(p)}: no difference found) at USD ${cheap.usdPerPass.toFixed(4)} per pass against ${dear.usdPerPass.toFixed(4)}. models.yaml has no preference key, so the change removes ${dear.entry}: reject this if you keep it as a fallback.`,
        evidence: {
          numbers: { ...prefixed("cheap", modelNumbers(cheap)), ...prefixed("dear", modelNumbers(dear)) },
          runs: [...new Set([...cheap.runs, ...dear.runs])],
          test,
        },
      };
      out.push(withChange(proposal, inputs.models, (text) => removeModel(text, dear.entry)));
    }
  return out;
}

// Demotion for integrity (docs/integrity.md): at one rank, a work model whose runs have integrity
// events (the runner had to refuse, undo or override what it did) significantly more often than its
// peers' is proposed one rank down (dropped at rank 1): Fisher's exact test as for pass rates, alpha
// divided by the number of models tested at the rank.
const share = (c: { n: number; withEvents: number }) => (c.n === 0 ? 0 : c.withEvents / c.n);
const shown = (c: { n: number; withEvents: number }) =>
  `${c.withEvents}/${c.n} (${(share(c) * 100).toFixed(0)} %)`;

function integrityProposals(
  atRank: ModelStats[],
  inputs: ProposalInputs,
  base: Base,
  o: typeof DEFAULTS,
): EvolveProposal[] {
  const pool = atRank.filter((m) => (m.integrityRuns?.n ?? 0) >= o.minRuns);
  if (pool.length < 2) return [];
  const threshold = o.alpha / pool.length;
  const out: EvolveProposal[] = [];
  for (const m of pool) {
    const own = m.integrityRuns as { n: number; withEvents: number };
    const rest = pool
      .filter((x) => x !== m)
      .reduce(
        (acc, x) => ({
          n: acc.n + (x.integrityRuns?.n ?? 0),
          withEvents: acc.withEvents + (x.integrityRuns?.withEvents ?? 0),
        }),
        { n: 0, withEvents: 0 },
      );
    const { p } = fisherExact(
      own.withEvents,
      own.n - own.withEvents,
      rest.withEvents,
      rest.n - rest.withEvents,
    );
    if (p >= threshold || share(own) <= share(rest)) continue;
    const test: FisherEvidence = {
      test: "Fisher's exact test, two-sided",
      // `passes` here counts runs WITH integrity events (the evidence's fixed shape).
      a: {
        label: `${m.entry} at rank ${m.rank}: runs with integrity events`,
        passes: own.withEvents,
        fails: own.n - own.withEvents,
      },
      b: {
        label: `the other models at rank ${m.rank}: runs with integrity events`,
        passes: rest.withEvents,
        fails: rest.n - rest.withEvents,
      },
      p,
      alpha: threshold,
      significant: true,
    };
    const drop = m.rank <= 1;
    const proposal: EvolveProposal = {
      ...base(drop ? "drop" : "demote", m.entry, `${m.entry}\0${m.rank}\0integrity`),
      title: drop
        ? `drop ${m.entry} from models.yaml (the runner had to stop it more often than its peers at rank 1, the lowest rank)`
        : `move ${m.entry} down from rank ${m.rank} to rank ${m.rank - 1} (integrity)`,
      reason: `the runner refused, undid or overrode what ${m.entry} did in ${shown(own)} of its runs, against ${shown(rest)} for the other models of rank ${m.rank}; p = ${fmtP(p)} < ${fmtP(threshold)} (docs/integrity.md).${m.scripted ? " (SCRIPTED model: the numbers come from scripted runs.)" : ""}`,
      evidence: {
        numbers: { ...modelNumbers(m), integrityRuns: own.n, runsWithIntegrityEvents: own.withEvents },
        runs: m.runs,
        test,
      },
    };
    out.push(
      withChange(proposal, inputs.models, (text) =>
        drop ? removeModel(text, m.entry) : setRank(text, m.entry, m.rank - 1),
      ),
    );
  }
  return out;
}

function prefixed(prefix: string, numbers: Record<string, number | string | null>) {
  return Object.fromEntries(Object.entries(numbers).map(([k, v]) => [`${prefix}.${k}`, v]));
}

function withChange(
  proposal: EvolveProposal,
  target: { file: string; text: string } | undefined,
  edit: (text: string) => string,
): EvolveProposal {
  if (!target)
    return {
      ...proposal,
      noChange:
        "no models.yaml was found (--models FILE; default: <home>/models.yaml): there is no file to change",
    };
  try {
    const after = edit(target.text);
    return {
      ...proposal,
      change: {
        file: target.file,
        label: "models.yaml",
        beforeSha256: sha256(target.text),
        after,
        diff: unifiedDiff(target.text, after, "models.yaml"),
      },
    };
  } catch (error) {
    if (!(error instanceof EditError) && !(error instanceof Error && error.name === "ModelsConfigError"))
      throw error;
    return { ...proposal, noChange: `models.yaml cannot take this change: ${error.message}` };
  }
}

function memoryProposals(
  pending: { id: string; title: string; meta: string; body: string }[],
  base: Base,
): EvolveProposal[] {
  const groups = new Map<string, { ids: string[]; runs: Set<string>; title: string; body: string }>();
  for (const p of pending) {
    const k = normalText(p.body);
    const g = groups.get(k) ?? { ids: [], runs: new Set<string>(), title: p.title, body: p.body };
    groups.set(k, g);
    g.ids.push(p.id);
    g.runs.add(/· run (\S+)/.exec(p.meta)?.[1] ?? p.id);
  }
  return [...groups.values()]
    .sort((a, b) => b.runs.size - a.runs.size || (a.ids[0] as string).localeCompare(b.ids[0] as string))
    .map((g) => ({
      ...base("memory", g.ids[0] as string, g.ids[0] as string),
      title: `accept the global memory proposal ${g.ids[0]} (${g.runs.size} run${g.runs.size === 1 ? "" : "s"} behind it)`,
      reason: `${g.ids.length} pending proposal${g.ids.length === 1 ? "" : "s"} with this text, from ${g.runs.size} run${g.runs.size === 1 ? "" : "s"}. Applying accepts ${g.ids[0]} into memory/global.md (read by every later run); the duplicates stay pending for 'scifi memory reject'. The text:\n${g.body}`,
      evidence: { numbers: { runs: g.runs.size, proposals: g.ids.length }, runs: [...g.runs].sort() },
      memory: { accept: g.ids[0] as string, duplicates: g.ids.slice(1) },
    }));
}

/**
 * One recurring finding as a list item of the work agent's prompt: a review wrote its text (from
 * what the agent did), so it is one line of plain text (inlineText: no heading, fence, HTML comment,
 * link or second item of its own); its lines are joined with spaces.
 */
export function findingItem(f: Pick<RecurringFinding, "text" | "runs">): string {
  return `- ${inlineText(f.text.replace(/\n/g, " "))} (${f.runs.length} runs)`;
}

/** A model's summary as list items of plain text, one per non-empty line, its own list marks dropped. */
export function summaryItems(text: string): string[] {
  return text
    .split(/\r\n|\r|\n|\u2028|\u2029/)
    .map((line) => line.trim().replace(/^(?:[-*+]|\d+[.)])\s+/, ""))
    .filter((line) => line !== "")
    .map((line) => `- ${inlineText(line)}`);
}

function promptProposal(recurring: RecurringFinding[], inputs: ProposalInputs, base: Base): EvolveProposal {
  const top = recurring.slice(0, 5);
  const summary = inputs.findingsSummary;
  // What goes into a prompt file has no control characters: they are written as their escapes.
  const lines = summary
    ? [
        `## Lessons from earlier runs (scifi evolve; summarised by ${summary.scripted ? "the SCRIPTED model " : ""}${summary.model})`,
        "",
        // A model wrote it from reviews of what agents did: each of its lines one plain list item
        // (inlineText), so no heading, fence, comment or link of its own reaches the prompt.
        ...summaryItems(summary.text),
      ]
    : [
        "## Lessons from earlier runs (scifi evolve)",
        "",
        "Reviews of earlier runs found these again and again; check for them before you report done:",
        ...top.map(findingItem),
      ];
  const proposal: EvolveProposal = {
    ...base("prompt", "work-prompt", top.map((f) => normalText(f.text)).join("\0")),
    title: `add ${top.length} recurring review finding${top.length === 1 ? "" : "s"} to the work agent's prompt`,
    // Findings are the reviews' words about the agent's work: each one line, escaped (a38c).
    reason: `review findings that recur across runs:\n${top.map((f) => `- ${visible(f.text)} (${f.runs.length} runs, ${f.count} times)`).join("\n")}`,
    evidence: {
      numbers: Object.fromEntries(top.map((f, i) => [`finding${i + 1}.runs`, f.runs.length])),
      runs: [...new Set(top.flatMap((f) => f.runs))].sort(),
    },
    ...(summary ? { summarisedBy: { model: summary.model, scripted: summary.scripted } } : {}),
  };
  if (!inputs.prompt)
    return {
      ...proposal,
      noChange:
        "no prompt file to change: it was not found (--prompt FILE; default: the work agent's runner/agents/work.md)",
    };
  const after = appendBlock(inputs.prompt.text, lines.join("\n"));
  return {
    ...proposal,
    change: {
      file: inputs.prompt.file,
      label: inputs.prompt.file.split("/").slice(-2).join("/"),
      beforeSha256: sha256(inputs.prompt.text),
      after,
      diff: unifiedDiff(inputs.prompt.text, after, inputs.prompt.file.split("/").slice(-2).join("/")),
    },
  };
}
