// What the eval report page reads: `evals/<id>/summary.json` and every `trials/*/result.json`,
// validated against the contracts (summary.ts's types, as a schema here; trial-result.ts's schema)
// before anything reaches the page. Every string in them is hostile: the page escapes it.
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { EvalSummary } from "./summary.ts";
import { type TrialResult, trialResultSchema } from "./trial-result.ts";

/** Files over this are refused: a summary or a trial result is a few KiB. */
const MAX_JSON_BYTES = 16 * 2 ** 20;

const sampleStat = z.strictObject({
  n: z.number().int().nonnegative(),
  mean: z.number(),
  se: z.number().nonnegative(),
  median: z.number(),
});
const interval = z.tuple([z.number(), z.number()]);
const integrity = z
  .strictObject({
    n: z.number().int().nonnegative(),
    events: z.number().int().nonnegative(),
    eventsPerTrial: z.strictObject({
      mean: z.number().nonnegative(),
      ci95: z.tuple([z.number(), z.number().nullable()]),
    }),
    trialsWithEvents: z.number().int().nonnegative(),
    share: z.number().min(0).max(1),
    wilson95: interval,
    byKind: z.record(
      z.string(),
      z.strictObject({
        events: z.number().int().nonnegative(),
        trials: z.number().int().nonnegative(),
        share: z.number().min(0).max(1),
        wilson95: interval,
        eventsPerTrial: z.number().nonnegative(),
      }),
    ),
  })
  .optional();
const passStats = {
  n: z.number().int().nonnegative(),
  passes: z.number().int().nonnegative(),
  fails: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
  passRate: z.number().min(0).max(1),
  wilson95: interval,
  usd: z.number().nonnegative(),
  usdPerPass: z.number().nonnegative().nullable(),
};
const comparison = {
  a: z.string(),
  b: z.string(),
  cells: z.number().int().nonnegative(),
  meanDifference: z.number(),
  ci95: interval,
  pValue: z.number().min(0).max(1),
  pValueHolm: z.number().min(0).max(1),
  better: z.string(),
  text: z.string(),
  method: z.string(),
};
const variantCell = z.strictObject({
  n: z.number().int().nonnegative(),
  passes: z.number().int().nonnegative(),
  errors: z.number().int().nonnegative(),
  passRate: z.number().min(0).max(1),
  wilson95: interval,
  iterations: sampleStat,
  wallMs: sampleStat,
  tokens: sampleStat,
  usd: z.number().nonnegative(),
  usdPerPass: z.number().nonnegative().nullable(),
});
const kTable = z.record(z.string().regex(/^[1-9][0-9]*$/), z.number().min(0).max(1));

/** summary.ts as a schema; the two assignments below fail to compile when they drift apart. */
export const evalSummarySchema = z.strictObject({
  version: z.literal(1),
  evalId: z.string().min(1),
  computedAt: z.string(),
  suite: z.string(),
  models: z.array(z.string()),
  variants: z.array(z.string()),
  tasks: z.array(z.string()),
  repeats: z.number().int().nonnegative(),
  trials: z.strictObject({
    planned: z.number().int().nonnegative(),
    pass: z.number().int().nonnegative(),
    fail: z.number().int().nonnegative(),
    error: z.number().int().nonnegative(),
    pending: z.number().int().nonnegative(),
  }),
  budget: z.strictObject({
    usd: z.number().nonnegative().nullable(),
    spentUsd: z.number().nonnegative(),
    stoppedByBudget: z.boolean(),
  }),
  groups: z.array(
    z.strictObject({
      ...passStats,
      task: z.string(),
      variant: z.string(),
      model: z.string(),
      scripted: z.boolean(),
      passAtK: kTable,
      passHatK: kTable,
      iterations: sampleStat,
      wallMs: sampleStat,
      tokens: sampleStat,
      usdPerTrial: sampleStat,
      cacheReadShare: sampleStat,
      integrity,
    }),
  ),
  byModel: z.array(z.strictObject({ ...passStats, model: z.string(), scripted: z.boolean(), integrity })),
  byVariant: z.array(z.strictObject({ ...passStats, variant: z.string(), integrity })),
  integrityComparisons: z
    .array(
      z.strictObject({
        a: z.string(),
        b: z.string(),
        aTrials: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
        bTrials: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
        difference: z.number(),
        p: z.number().min(0).max(1),
        higher: z.string(),
        text: z.string(),
      }),
    )
    .optional(),
  byModelVariant: z.array(
    z.strictObject({
      ...passStats,
      model: z.string(),
      variant: z.string(),
      scripted: z.boolean(),
      tasks: z.number().int().nonnegative(),
      iterations: sampleStat,
      wallMs: sampleStat,
      tokens: sampleStat,
      usdPerTrial: sampleStat,
    }),
  ),
  variantTable: z.strictObject({
    variants: z.array(z.string()),
    rows: z.array(
      z.strictObject({
        model: z.string(),
        scripted: z.boolean(),
        task: z.string().nullable(),
        cells: z.array(variantCell.nullable()),
      }),
    ),
  }),
  comparisons: z.array(z.strictObject(comparison)),
  variantComparisons: z.array(z.strictObject({ ...comparison, model: z.string() })),
  flags: z
    .strictObject({
      audited: z.boolean(),
      tasks: z.array(
        z.strictObject({
          task: z.string(),
          audit: z.union([
            z.literal("skipped"),
            z.literal("pending"),
            z.strictObject({
              sound: z.boolean(),
              contentHash: z.string(),
              findings: z.array(z.strictObject({ audit: z.string(), text: z.string() })),
            }),
          ]),
          lazyPasses: z.array(z.string()),
          solutionFails: z.boolean(),
          noTrialPassed: z.boolean(),
          everyTrialPassed: z.boolean(),
          flags: z.array(
            z.enum(["lazy_passes", "solution_fails", "audit_error", "no_trial_passed", "every_trial_passed"]),
          ),
        }),
      ),
      flagged: z.array(z.string()),
      byModelUnflagged: z.array(z.strictObject({ ...passStats, model: z.string(), scripted: z.boolean() })),
    })
    .optional(),
  roles: z
    .array(
      z.strictObject({
        model: z.string(),
        scripted: z.boolean(),
        roles: z.strictObject({
          work: z.array(z.string()),
          review: z.array(z.string()),
          control: z.array(z.string()),
          critique: z.array(z.string()),
        }),
      }),
    )
    .optional(),
  impossible: z
    .strictObject({
      variants: z.array(z.strictObject({ task: z.string(), variant: z.string() })),
      byModel: z.array(
        z.strictObject({
          ...passStats,
          model: z.string(),
          scripted: z.boolean(),
          integrity: integrity.unwrap(),
        }),
      ),
      groups: z.array(
        z.strictObject({
          ...passStats,
          task: z.string(),
          variant: z.string(),
          model: z.string(),
          scripted: z.boolean(),
        }),
      ),
    })
    .optional(),
});
const _schemaIsContract: EvalSummary = {} as z.infer<typeof evalSummarySchema>;
const _contractIsSchema: z.infer<typeof evalSummarySchema> = {} as EvalSummary;
void _schemaIsContract;
void _contractIsSchema;

export interface LoadedTrial {
  /** The trial's folder name under trials/. */
  folder: string;
  result: TrialResult;
}

export interface EvalPageInput {
  summary: EvalSummary;
  trials: LoadedTrial[];
  /** Trial folders whose result.json is missing (still running, or killed) or invalid, with why. */
  problems: { folder: string; error: string }[];
}

/** Reads and validates an eval folder; throws naming the file and the field when the summary is bad. */
export function loadEvalPageInput(evalDir: string): EvalPageInput {
  const summaryFile = join(evalDir, "summary.json");
  if (!lstatSync(evalDir, { throwIfNoEntry: false })?.isDirectory())
    throw new Error(
      `${evalDir} is not an eval folder (evals/<eval id>); pass the folder \`scifi eval\` wrote`,
    );
  const parsed = evalSummarySchema.safeParse(readJson(summaryFile));
  if (!parsed.success)
    throw new Error(
      `${summaryFile} does not follow the summary contract (runner/eval/summary.ts): ${issues(parsed.error)}`,
    );
  const trials: LoadedTrial[] = [];
  const problems: EvalPageInput["problems"] = [];
  const trialsDir = join(evalDir, "trials");
  const folders = lstatSync(trialsDir, { throwIfNoEntry: false })?.isDirectory()
    ? readdirSync(trialsDir).sort()
    : [];
  for (const folder of folders) {
    const file = join(trialsDir, folder, "result.json");
    try {
      const result = trialResultSchema.safeParse(readJson(file));
      if (!result.success) throw new Error(`does not follow the trial contract: ${issues(result.error)}`);
      if (result.data.trialId !== folder)
        throw new Error(`holds trial ${result.data.trialId}, not ${folder}`);
      trials.push({ folder, result: result.data });
    } catch (error) {
      problems.push({ folder, error: (error as Error).message });
    }
  }
  return { summary: parsed.data as EvalSummary, trials, problems };
}

/** A regular file (no link followed), bounded, parsed as JSON. */
function readJson(file: string): unknown {
  const stat = lstatSync(file, { throwIfNoEntry: false });
  if (!stat) throw new Error(`${file} is missing (written when a trial ends; the eval may still be running)`);
  if (!stat.isFile()) throw new Error(`${file} is not a regular file; refusing to read it`);
  if (stat.size > MAX_JSON_BYTES) throw new Error(`${file} is ${stat.size} bytes, over ${MAX_JSON_BYTES}`);
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(`${file} is not valid JSON: ${(error as Error).message}`);
  }
}

function issues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.join(".") || "(top)"}: ${i.message}`)
    .join("; ");
}
