// `scifi evolve` as a function: read the runs (and the runs behind eval trials), compute the
// statistics, build the proposals with their evidence, and write the pending ones to
// `<home>/evolve/`. It changes no config, prompt or memory: that is `apply`, a person's act.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { listProposals } from "../memory/proposals.ts";
import { homePaths } from "../paths.ts";
import { type EvalInput, type EvalModelStats, evalFolder, evalModelStats, readEval } from "./evals.ts";
import { buildProposals, type Comparison, type EvolveProposal, type ProposalInputs } from "./proposals.ts";
import { isRunFolder, type RunFacts, readRunFacts } from "./run-facts.ts";
import { computeStats, type EvolveStats, type RecurringFinding } from "./stats.ts";
import { type ProposalStatus, saveProposals } from "./store.ts";

export interface EvolveOptions {
  home: string;
  /** Folder of run folders (default `<home>/runs`). */
  runsDir?: string;
  /** Eval ids under `<home>/evals/` or eval folders. */
  evals?: string[];
  /** models.yaml to compute rank changes on (default `<home>/models.yaml` when it exists). */
  modelsFile?: string;
  /** The prompt file a prompt proposal appends to (default: the work agent's runner/agents/work.md). */
  promptFile?: string;
  /** Summarises recurring findings (summarise.ts); absent: the findings are listed as they are. */
  summarise?: (findings: RecurringFinding[]) => Promise<{ text: string; model: string; scripted: boolean }>;
  /** Write the proposals to `<home>/evolve/` (default true). */
  write?: boolean;
  now?: Date;
  alpha?: number;
  minPasses?: number;
  minRuns?: number;
}

export interface EvolveResult {
  stats: EvolveStats;
  evals: EvalModelStats[];
  evalProblems: EvalInput["unreadable"];
  /** The evals' own paired comparisons of models (summary.json), with their eval id. */
  evalComparisons: (EvalInput["comparisons"][number] & { evalId: string })[];
  /** Run folders that could not be read, with why. */
  unreadable: { dir: string; reason: string }[];
  comparisons: Comparison[];
  proposals: { proposal: EvolveProposal; status: ProposalStatus }[];
}

export const DEFAULT_PROMPT = new URL("../agents/work.md", import.meta.url).pathname;

/** Reads every run folder under `runsDir` (those with a state.json), in name order. */
export function readRuns(
  runsDir: string,
  extra: string[] = [],
): { facts: RunFacts[]; unreadable: EvolveResult["unreadable"] } {
  const dirs = existsSync(runsDir)
    ? readdirSync(runsDir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => join(runsDir, e.name))
        .sort()
    : [];
  const seen = new Set(dirs.map((d) => resolve(d)));
  for (const dir of extra) {
    if (seen.has(resolve(dir))) continue;
    dirs.push(dir);
    seen.add(resolve(dir));
  }
  const facts: RunFacts[] = [];
  const unreadable: EvolveResult["unreadable"] = [];
  for (const dir of dirs) {
    if (!isRunFolder(dir)) continue;
    try {
      facts.push(readRunFacts(dir));
    } catch (error) {
      unreadable.push({ dir, reason: (error as Error).message });
    }
  }
  return { facts, unreadable };
}

export async function evolve(options: EvolveOptions): Promise<EvolveResult> {
  const evalInputs = (options.evals ?? []).map((id) => readEval(evalFolder(options.home, id)));
  const evalRuns = evalInputs.flatMap((e) =>
    e.trials.map((t) => t.runDir).filter((d) => d !== "" && existsSync(d)),
  );
  const { facts, unreadable } = readRuns(options.runsDir ?? homePaths(options.home).runs, evalRuns);
  const stats = computeStats(facts);

  const modelsFile = options.modelsFile ?? homePaths(options.home).modelsConfig;
  const promptFile = options.promptFile ?? DEFAULT_PROMPT;
  const minRuns = options.minRuns ?? 3;
  const recurring = stats.findings.filter((f) => f.runs.length >= minRuns).slice(0, 5);
  const inputs: ProposalInputs = {
    stats,
    memory: listProposals(options.home).filter((p) => p.status === "pending"),
    ...(existsSync(modelsFile)
      ? { models: { file: resolve(modelsFile), text: readFileSync(modelsFile, "utf8") } }
      : {}),
    ...(existsSync(promptFile)
      ? { prompt: { file: resolve(promptFile), text: readFileSync(promptFile, "utf8") } }
      : {}),
    ...(options.summarise && recurring.length > 0
      ? { findingsSummary: await options.summarise(recurring) }
      : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.alpha !== undefined ? { alpha: options.alpha } : {}),
    ...(options.minPasses !== undefined ? { minPasses: options.minPasses } : {}),
    minRuns,
  };
  const { proposals, comparisons } = buildProposals(inputs);
  return {
    stats,
    evals: evalInputs.flatMap(evalModelStats),
    evalProblems: evalInputs.flatMap((e) => e.unreadable),
    evalComparisons: evalInputs.flatMap((e) => e.comparisons.map((c) => ({ ...c, evalId: e.evalId }))),
    unreadable,
    comparisons,
    proposals:
      options.write === false
        ? proposals.map((proposal) => ({ proposal, status: "pending" as const }))
        : saveProposals(options.home, proposals),
  };
}
