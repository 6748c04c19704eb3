// The eval's summary files, computed from the trials' results and written whole (summary.json, the
// CSVs): after every trial (engine.ts) and by the tests that build an eval folder (its own file:
// the scheduler stays readable).
import { existsSync, readdirSync } from "node:fs";
import { writeFilesAtomic } from "../atomic-write.ts";
import { type Bookkeeping, emptyBookkeeping, timePart } from "./bookkeeping.ts";
import { withFlags } from "./flags.ts";
import { impossibleCsv, possiblePlan, summarizeEval } from "./impossible.ts";
import { type EvalPlan, evalFiles } from "./plan.ts";
import { summaryCsv } from "./statistics.ts";
import type { EvalSummary } from "./summary.ts";
import { readTrialResult } from "./trial.ts";
import type { TrialResult } from "./trial-result.ts";
import { variantTableCsv } from "./variant-table.ts";

/** The result.json of every trial of the plan that has one. */
export function readResults(evalDir: string, plan: EvalPlan): Map<string, TrialResult> {
  const results = new Map<string, TrialResult>();
  if (!existsSync(evalFiles(evalDir).trials)) return results;
  const present = new Set(readdirSync(evalFiles(evalDir).trials));
  for (const t of plan.trials) {
    if (!present.has(t.trialId)) continue;
    const r = readTrialResult(evalDir, t.trialId);
    if (r) results.set(t.trialId, r);
  }
  return results;
}

/**
 * Writes summary.json, summary.csv and summary-variants.csv (atomically) from the results so far;
 * `parts` (the bench) is told the time of the computation and of the writes apart.
 */
export function writeSummary(
  evalDir: string,
  plan: EvalPlan,
  results: Map<string, TrialResult>,
  stoppedByBudget: boolean,
  parts: Bookkeeping = emptyBookkeeping(),
): EvalSummary {
  const { summary, files } = timePart(parts, "summary", () =>
    summaryFiles(evalDir, plan, results, stoppedByBudget),
  );
  // Each file is replaced whole (a reader never sees half of one), summary.json first; the eval's
  // folder is synced once after the last rename.
  timePart(parts, "summaryFiles", () =>
    writeFilesAtomic(
      files.map(({ file, text }, i) => ({
        file,
        text,
        options: i === 0 ? { mode: 0o644 } : { tempFile: `${file}.tmp` },
      })),
    ),
  );
  return summary;
}

/**
 * The summary of the results so far and the text of each of its files (summary.json first);
 * `now` is its computedAt (a test recomputes a written summary with the time it was written).
 */
export function summaryFiles(
  evalDir: string,
  plan: EvalPlan,
  results: Map<string, TrialResult>,
  stoppedByBudget: boolean,
  now?: Date,
): { summary: EvalSummary; files: { file: string; text: string }[] } {
  const trials = [...results.values()];
  // The flags are about the possible variants' trials, as every pass rate (impossible.ts).
  const flagged = withFlags(
    evalDir,
    possiblePlan(plan),
    summarizeEval(plan, trials, { stoppedByBudget, ...(now ? { now } : {}) }),
    trials,
  );
  // Who played each role, per model, as eval.json records it (docs/eval.md, "Models").
  const summary: EvalSummary = {
    ...flagged,
    roles: plan.models.flatMap((m) =>
      m.roles ? [{ model: m.label, scripted: m.scripted, roles: m.roles }] : [],
    ),
  };
  const paths = evalFiles(evalDir);
  return {
    summary,
    files: [
      { file: paths.summary, text: `${JSON.stringify(summary, null, 2)}\n` },
      { file: paths.csv, text: summaryCsv(summary) },
      { file: paths.variantsCsv, text: variantTableCsv(summary.variantTable) },
      ...(summary.impossible ? [{ file: paths.impossibleCsv, text: impossibleCsv(summary.impossible) }] : []),
    ],
  };
}
