// What `scifi evolve` prints: the statistics, the comparisons that found nothing, and each
// proposal with its evidence and diff. Model names, check ids, output tails, findings and memory
// text all came from runs (hostile): every one goes through runner/terminal-text.ts, so a CR, an
// ESC sequence or a bidi override is shown as its escape and a newline cannot fake a line.
import { LISTING_WIDTH, visible, visibleLines } from "../terminal-text.ts";
import type { EvolveResult } from "./evolve.ts";
import { type EvolveProposal, fmtP } from "./proposals.ts";
import type { ProposalStatus } from "./store.ts";

const num = (n: number | null | undefined, digits = 2) => (n == null ? "-" : n.toFixed(digits));
const pct = (n: number | undefined) => (n === undefined ? "-" : `${(n * 100).toFixed(0)}%`);

export function renderResult(result: EvolveResult): string {
  const s = result.stats;
  const out: string[] = [
    `runs: ${s.runs} (${s.ended} ended${s.scriptedRuns > 0 ? `, ${s.scriptedRuns} SCRIPTED` : ""})`,
  ];
  for (const u of result.unreadable) out.push(`  unreadable run ${visible(u.dir)}: ${visible(u.reason)}`);
  out.push("", "work, per model and rank:");
  out.push(
    "  model  rank  passes  runs  iter-to-pass  usd/pass  tokens/pass  tool-fail  allowlist  blockers  cache-read",
  );
  for (const m of s.models.filter((x) => x.role === "work")) {
    const p = m.workPasses ?? { n: 0, passes: 0 };
    const r = m.wholeRuns ?? { n: 0, passes: 0 };
    out.push(
      `  ${visible(m.entry)}${m.scripted ? " [SCRIPTED]" : ""}  ${m.rank}  ${p.passes}/${p.n}  ${r.passes}/${r.n}  ${m.iterationsToPass ? `${num(m.iterationsToPass.mean, 1)} (median ${m.iterationsToPass.median})` : "-"}  ${num(m.usdPerPass, 4)}  ${num(m.tokensPerPass, 0)}  ${pct(m.toolFailureRate)}  ${pct(m.allowlistRejectionRate)}  ${m.blockers ?? 0}  ${pct(m.cacheReadShare)}`,
    );
  }
  const reviews = s.models.filter((x) => x.role === "review" && x.review);
  if (reviews.length > 0) {
    out.push("", "review, per model and rank (verdicts on nodes with checks):");
    for (const m of reviews) {
      const r = m.review as NonNullable<typeof m.review>;
      out.push(
        `  ${visible(m.entry)}${m.scripted ? " [SCRIPTED]" : ""}  rank ${m.rank}: ${r.verdictsWithChecks} verdicts, failed what checks passed ${r.failedWhatChecksPassed}, passed what checks failed ${r.passedWhatChecksFailed}`,
      );
    }
  }
  const others = s.models.filter((x) => x.role !== "work");
  if (others.length > 0) {
    out.push("", "spend per model, rank and role:");
    for (const m of others)
      out.push(
        `  ${visible(m.entry)}${m.scripted ? " [SCRIPTED]" : ""}  rank ${m.rank}  ${visible(m.role)}: ${m.calls} calls (${m.failedCalls} failed), USD ${m.usd.toFixed(4)}, cache-read ${pct(m.cacheReadShare)}`,
      );
  }
  if (result.evals.length > 0) {
    out.push("", "eval trials, per model:");
    for (const e of result.evals)
      out.push(
        `  ${visible(e.evalId)}  ${visible(e.model)}${e.scripted ? " [SCRIPTED]" : ""}: ${e.passes}/${e.passes + e.fails} passed (${e.errors} errors), USD/pass ${num(e.usdPerPass, 4)}, tool rejections ${e.toolRejections}/${e.toolCalls}`,
      );
  }
  for (const c of result.evalComparisons)
    out.push(
      `  ${visible(c.evalId)}: ${visible(c.a)} against ${visible(c.b)} over ${c.cells} cells: ${visible(c.text)}`,
    );
  for (const p of result.evalProblems)
    out.push(`  unreadable trial ${visible(p.file)}: ${visible(p.reason)}`);
  const failing = s.groups.filter((g) => g.failingChecks.length > 0);
  if (failing.length > 0) {
    out.push("", "failing checks, per task group:");
    for (const g of failing) {
      out.push(`  ${visible(g.group)} (${g.passed}/${g.runs} runs passed)`);
      for (const c of g.failingChecks.slice(0, 5)) {
        out.push(
          `    ${visible(c.task)} ${visible(c.check)}: failed in ${c.runsFailed.length} of ${c.runsOfTask} runs (${c.failures} times); last output:`,
        );
        out.push(
          ...visibleLines(c.tails[c.tails.length - 1] ?? "", {
            prefix: "      | ",
            max: 6,
            width: LISTING_WIDTH,
            continuation: "      |+ ",
          }),
        );
      }
    }
  }
  if (result.comparisons.length > 0) {
    out.push("", "no proposal:");
    for (const c of result.comparisons)
      out.push(`  ${visible(c.entry)} (rank ${c.rank}): ${visible(c.text)}`);
  }
  out.push("", result.proposals.length === 0 ? "no proposals" : `proposals (${result.proposals.length}):`);
  for (const { proposal, status } of result.proposals) out.push("", ...renderProposal(proposal, status));
  return `${out.join("\n")}\n`;
}

export function renderProposal(p: EvolveProposal, status: ProposalStatus): string[] {
  const out = [`${visible(p.id)}  [${status}]  ${p.kind}: ${visible(p.title)}`];
  // Folded at 80 columns, each added row marked: a terminal's soft wrap of a long finding would
  // otherwise start a row with the finding's own `  decide:` (a38c).
  out.push(...visibleLines(p.reason, { prefix: "  ", width: LISTING_WIDTH, continuation: "  + " }));
  const t = p.evidence.test;
  // An integrity test counts runs with and without integrity events in the same two fields.
  const [yes, no] =
    p.title.endsWith("(integrity)") || p.reason.includes("docs/integrity.md")
      ? ["with", "without"]
      : ["passed", "failed"];
  if (t)
    out.push(
      `  test: ${t.test}: ${visible(t.a.label)} ${t.a.passes} ${yes}, ${t.a.fails} ${no}; ${visible(t.b.label)} ${t.b.passes} ${yes}, ${t.b.fails} ${no}; p = ${fmtP(t.p)} (threshold ${fmtP(t.alpha)})`,
    );
  const numbers = Object.entries(p.evidence.numbers)
    .map(([k, v]) => `${visible(k)}=${typeof v === "number" ? Number(v.toFixed(4)) : visible(String(v))}`)
    .join(", ");
  if (numbers) out.push(`  numbers: ${numbers}`);
  out.push(
    `  runs (${p.evidence.runs.length}): ${p.evidence.runs.slice(0, 10).map(visible).join(" ")}${p.evidence.runs.length > 10 ? ` ... (${p.evidence.runs.length - 10} more in ${visible(p.id)}.json)` : ""}`,
  );
  if (p.summarisedBy)
    out.push(
      `  summarised by ${p.summarisedBy.scripted ? "the SCRIPTED model " : ""}${visible(p.summarisedBy.model)}`,
    );
  if (p.command) out.push(`  command: ${p.command.map(visible).join(" ")}`);
  if (p.change)
    out.push(
      `  change of ${visible(p.change.file)}:`,
      ...visibleLines(p.change.diff.replace(/\n$/, ""), {
        prefix: "    ",
        width: LISTING_WIDTH,
        continuation: "    + ",
      }),
    );
  else if (p.noChange) out.push(`  ${visible(p.noChange)}`);
  if (status === "pending")
    out.push(`  decide: scifi evolve apply ${p.id} --note TEXT | scifi evolve reject ${p.id} --note TEXT`);
  return out;
}
