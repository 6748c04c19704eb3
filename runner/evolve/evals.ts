// Eval results as `scifi evolve` reads them: `evals/<id>/trials/<trial>/result.json` through the
// fixed contract (runner/eval/trial-result.ts). Each trial gives a whole-run verdict per model spec;
// its run folder, when it is still there, is read like any run (its passes, tools, checks).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { EvalSummary, PairedComparison } from "../eval/summary.ts";
import { type TrialResult, trialResultSchema } from "../eval/trial-result.ts";
import { homePaths } from "../paths.ts";

export interface EvalModelStats {
  evalId: string;
  model: string;
  scripted: boolean;
  trials: number;
  passes: number;
  fails: number;
  /** Infrastructure errors: not in the pass rate. */
  errors: number;
  usd: number;
  usdPerPass: number | null;
  toolCalls: number;
  toolRejections: number;
  /** Mean over trials of each trial's cache-read share. */
  cacheReadShare: number;
}

export interface EvalInput {
  evalId: string;
  folder: string;
  trials: TrialResult[];
  /** result.json files that do not match the contract, with why (shown, never guessed at). */
  unreadable: { file: string; reason: string }[];
  /** The eval's own paired model comparisons (summary.json), when it wrote one. */
  comparisons: PairedComparison[];
}

/** An eval id under `<home>/evals/`, or an eval folder. */
export function evalFolder(home: string, id: string): string {
  const direct = resolve(id);
  if (existsSync(join(direct, "trials"))) return direct;
  const underHome = join(homePaths(home).evals, id);
  if (existsSync(join(underHome, "trials"))) return underHome;
  throw new Error(
    `no eval '${id}': neither ${underHome} nor ${direct} holds a trials/ folder; give an id from evals/ or an eval folder`,
  );
}

export function readEval(folder: string): EvalInput {
  const trialsDir = join(folder, "trials");
  const trials: TrialResult[] = [];
  const unreadable: EvalInput["unreadable"] = [];
  for (const name of readdirSync(trialsDir).sort()) {
    const file = join(trialsDir, name, "result.json");
    if (!existsSync(file) || !statSync(file).isFile()) continue;
    try {
      const parsed = trialResultSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
      if (parsed.success) trials.push(parsed.data);
      else
        unreadable.push({
          file,
          reason: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "),
        });
    } catch (error) {
      unreadable.push({ file, reason: (error as Error).message });
    }
  }
  const evalId = trials[0]?.evalId ?? folder.split("/").pop() ?? folder;
  return { evalId, folder, trials, unreadable, comparisons: summaryComparisons(folder, unreadable) };
}

/** summary.json's comparisons (runner/eval/summary.ts); a summary of another version is said, not read. */
function summaryComparisons(folder: string, unreadable: EvalInput["unreadable"]): PairedComparison[] {
  const file = join(folder, "summary.json");
  if (!existsSync(file)) return [];
  try {
    const summary = JSON.parse(readFileSync(file, "utf8")) as Partial<EvalSummary>;
    if (summary.version !== 1 || !Array.isArray(summary.comparisons)) {
      unreadable.push({ file, reason: `not a version 1 eval summary with comparisons` });
      return [];
    }
    return summary.comparisons;
  } catch (error) {
    unreadable.push({ file, reason: (error as Error).message });
    return [];
  }
}

export function evalModelStats(input: EvalInput): EvalModelStats[] {
  const byModel = new Map<string, TrialResult[]>();
  for (const t of input.trials) byModel.set(t.model, [...(byModel.get(t.model) ?? []), t]);
  return [...byModel.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([model, trials]) => {
      const passes = trials.filter((t) => t.status === "pass").length;
      const usd = trials.reduce((a, t) => a + t.usd, 0);
      return {
        evalId: input.evalId,
        model,
        scripted: trials.some((t) => t.scripted),
        trials: trials.length,
        passes,
        fails: trials.filter((t) => t.status === "fail").length,
        errors: trials.filter((t) => t.status === "error").length,
        usd,
        usdPerPass: passes === 0 ? null : usd / passes,
        toolCalls: trials.reduce((a, t) => a + t.toolCalls, 0),
        toolRejections: trials.reduce((a, t) => a + t.toolRejections, 0),
        cacheReadShare: trials.reduce((a, t) => a + t.cacheReadShare, 0) / trials.length,
      };
    });
}
