// The statistics of one eval: `evals/<eval id>/summary.json` (and summary.csv), recomputed from the
// trials' result.json files whenever a trial ends and at the end. Like trial-result.ts, a fixed
// contract between the eval (which computes it), the eval report page and `scifi evolve` (which read
// it); docs/eval.md documents every field and formula. Only types live here.

export interface IntegrityKindStats {
  events: number;
  /** Trials with at least one event of this kind, their share and its Wilson interval. */
  trials: number;
  share: number;
  wilson95: [number, number];
  eventsPerTrial: number;
}

export interface IntegrityStats {
  /** Judged trials whose result carries integrity counts. */
  n: number;
  events: number;
  /** Mean events per trial and its 95 % interval (INTEGRITY_RATE_METHOD). */
  /** The interval's upper end is null when no trial counted (nothing bounds it). */
  eventsPerTrial: { mean: number; ci95: [number, number | null] };
  /** Trials with at least one event, their share and its Wilson interval at 95 %. */
  trialsWithEvents: number;
  share: number;
  wilson95: [number, number];
  byKind: Record<string, IntegrityKindStats>;
}

/**
 * Two models' shares of trials with integrity events, compared over all their judged trials with
 * Fisher's exact test (two-sided): pooled over cells, not paired by cell (docs/integrity.md).
 */
export interface IntegrityComparison {
  a: string;
  b: string;
  /** Trials with events / trials counted, per model. */
  aTrials: [number, number];
  bTrials: [number, number];
  /** share a - share b. */
  difference: number;
  /** Two-sided p of Fisher's exact test. */
  p: number;
  /** The model whose share is higher at p < 0.05, or `not distinguishable`. */
  higher: string | "not distinguishable";
  text: string;
}

/** Mean, standard error of the mean (sample sd / sqrt(n); 0 when n < 2) and median over n trials. */
export interface SampleStat {
  n: number;
  mean: number;
  se: number;
  median: number;
}

/** Pass counts and rates over the trials that ended `pass` or `fail` (errors are counted apart). */
export interface PassStats {
  /** Trials with a verdict (pass + fail). */
  n: number;
  passes: number;
  fails: number;
  /** Infrastructure errors: not in n, not in the rate. */
  errors: number;
  /** passes / n, 0 when n = 0. */
  passRate: number;
  /** Wilson score interval at 95 % (z = 1.96), [0, 1] when n = 0. */
  wilson95: [number, number];
  usd: number;
  /** usd / passes, null when nothing passed. */
  usdPerPass: number | null;
}

/** One cell: a task, one of its variants (description levels), one model. */
export interface GroupSummary extends PassStats {
  task: string;
  variant: string;
  model: string;
  scripted: boolean;
  /** pass@k (unbiased estimator 1 - C(n-c, k) / C(n, k)) for k = 1 .. n, keyed by k. */
  passAtK: Record<string, number>;
  /** pass^k (C(c, k) / C(n, k): all k of k drawn trials pass) for k = 1 .. n, keyed by k. */
  passHatK: Record<string, number>;
  iterations: SampleStat;
  wallMs: SampleStat;
  tokens: SampleStat;
  usdPerTrial: SampleStat;
  cacheReadShare: SampleStat;
  /** Integrity events of the cell's trials (docs/integrity.md); absent in summaries from before it. */
  integrity?: IntegrityStats;
}

/**
 * Two models on the same (task, variant) cells, or two variants of one model on the same tasks
 * (`VariantComparison`): paired by cell, difference of pass rates a - b (docs/eval.md, "Comparisons").
 */
export interface PairedComparison {
  a: string;
  b: string;
  /** Strata both sides have verdicts on: (task, variant) cells for models, tasks for variants. */
  cells: number;
  /** Mean over the strata of (pass rate a - pass rate b). */
  meanDifference: number;
  /** 95 % interval of the mean difference (not adjusted for multiplicity); contains meanDifference. */
  ci95: [number, number];
  /** Two-sided exact conditional p-value of "a and b pass alike in every stratum"; 1 without strata. */
  pValue: number;
  /** pValue after Holm's step-down adjustment over every comparison of the eval (both lists). */
  pValueHolm: number;
  /** `a` / `b`: pValueHolm < 0.05 and ci95 excludes 0 on that side; `not distinguishable` otherwise. */
  better: string | "not distinguishable";
  /** The finding in words: the signed difference a - b, its interval, p and the adjusted p. */
  text: string;
  /** How the interval and the p-value were computed (documented in docs/eval.md). */
  method: string;
}

/** Two variants (a, b: variant names) of one model over the tasks both have verdicts on. */
export interface VariantComparison extends PairedComparison {
  model: string;
}

/** One model on one variant over every task (pass statistics over its trials, SciFi Table 1). */
export interface ModelVariantSummary extends PassStats {
  model: string;
  variant: string;
  scripted: boolean;
  /** Tasks with at least one verdict. */
  tasks: number;
  iterations: SampleStat;
  wallMs: SampleStat;
  tokens: SampleStat;
  usdPerTrial: SampleStat;
}

/** One cell of the variant table: a model on one variant, one task or all of them. */
export interface VariantTableCell {
  n: number;
  passes: number;
  errors: number;
  passRate: number;
  wilson95: [number, number];
  iterations: SampleStat;
  wallMs: SampleStat;
  tokens: SampleStat;
  usd: number;
  usdPerPass: number | null;
}

/**
 * The SciFi paper's Table 1 layout: per model, one row per task and one for all tasks (`task`
 * null), one column per variant (`cells[i]` is `variants[i]`; null where the task lacks it).
 */
export interface VariantTable {
  variants: string[];
  rows: { model: string; scripted: boolean; task: string | null; cells: (VariantTableCell | null)[] }[];
}

/** Why a task is flagged (docs/eval.md, "Flags"). */
export type FlagKind =
  | "lazy_passes"
  | "solution_fails"
  | "audit_error"
  | "no_trial_passed"
  | "every_trial_passed";

export interface TaskFlags {
  task: string;
  /** The audit: `skipped` (--no-audit), `pending` (not run yet), else its outcome. */
  audit:
    | "skipped"
    | "pending"
    | { sound: boolean; contentHash: string; findings: { audit: string; text: string }[] };
  /** The lazy agents (and `untouched`) whose run passed. */
  lazyPasses: string[];
  solutionFails: boolean;
  noTrialPassed: boolean;
  everyTrialPassed: boolean;
  flags: FlagKind[];
}

export interface EvalFlags {
  /** Whether the audit ran before the trials (false: `--no-audit`, recorded in eval.json). */
  audited: boolean;
  tasks: TaskFlags[];
  /** Tasks with at least one flag. */
  flagged: string[];
  /** Per model, its pass statistics over the tasks without a flag (`byModel` has them over all). */
  byModelUnflagged: (PassStats & { model: string; scripted: boolean })[];
}

/**
 * The impossible variants of an eval (docs/eval.md, "Impossible variants"): their Expectation cannot
 * be met, so a pass is a cheat the checks missed or a check that is wrong. Never in a pass rate.
 */
export interface ImpossibleSummary {
  /** The (task, variant) pairs marked impossible, in plan order. */
  variants: { task: string; variant: string }[];
  /** Per model over every impossible variant: passes / judged trials and its Wilson interval. */
  byModel: (PassStats & { model: string; scripted: boolean; integrity: IntegrityStats })[];
  /** Per (task, impossible variant, model). */
  groups: (PassStats & { task: string; variant: string; model: string; scripted: boolean })[];
}

export interface EvalSummary {
  version: 1;
  evalId: string;
  /** When this summary was computed. */
  computedAt: string;
  suite: string;
  models: string[];
  variants: string[];
  tasks: string[];
  repeats: number;
  trials: { planned: number; pass: number; fail: number; error: number; pending: number };
  budget: { usd: number | null; spentUsd: number; stoppedByBudget: boolean };
  groups: GroupSummary[];
  /** `integrity`: the integrity events of the model's (the variant's) trials (docs/integrity.md). */
  byModel: (PassStats & { model: string; scripted: boolean; integrity?: IntegrityStats })[];
  byVariant: (PassStats & { variant: string; integrity?: IntegrityStats })[];
  /** Per model x variant over all tasks. */
  byModelVariant: ModelVariantSummary[];
  /** The same with tasks as rows and variants as columns (summary-variants.csv, the page). */
  variantTable: VariantTable;
  /** One per pair of models (plan order, a before b). */
  comparisons: PairedComparison[];
  /** Per model, one per pair of variants (summary order, a before b). */
  variantComparisons: VariantComparison[];
  /** One per pair of models (plan order): their integrity shares compared; absent before it existed. */
  integrityComparisons?: IntegrityComparison[];
  /**
   * The impossible variants' trials, apart; absent when the plan has none. Every other key leaves
   * them out, except `trials` and `budget` (what ran and what it cost).
   */
  impossible?: ImpossibleSummary;
  /** The audit of each task's checks and what cannot discriminate (docs/eval.md, "Flags"); absent before it existed. */
  flags?: EvalFlags;
  /** Per model, who played each role (work, review, control, critique); absent before it existed. */
  roles?: { model: string; scripted: boolean; roles: ModelRoles }[];
}

/** The models (names, provider:model) that play each role of a trial (runner/eval/model-specs.ts). */
export interface ModelRoles {
  work: string[];
  review: string[];
  control: string[];
  critique: string[];
}
