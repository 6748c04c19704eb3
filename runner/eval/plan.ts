// The plan of one eval, `evals/<eval id>/eval.json`: the suite as it was resolved when the eval
// started (tasks, variants and their SAM hashes, every file of each task folder, models and their specs, repeats, limits, budget,
// concurrency, engine) and the full list of trials. Written once, atomically, before any trial
// runs, so `scifi eval --resume <id>` needs no arguments and runs exactly the trials of the plan.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { writeJsonAtomic } from "../atomic-write.ts";
import { homePaths } from "../paths.ts";
import { nameSlug } from "../run-id.ts";
import type { Suite, SuiteModel } from "./suite.ts";
import { trialLimits } from "./trial-limits.ts";

const trialSchema = z.strictObject({
  trialId: z.string(),
  task: z.string(),
  variant: z.string(),
  model: z.string(),
  repeat: z.number().int().nonnegative(),
});
export type PlannedTrial = z.infer<typeof trialSchema>;

export const evalPlanSchema = z.strictObject({
  version: z.literal(1),
  evalId: z.string(),
  createdAt: z.string(),
  /** The suite file or folder (absolute) and its name. */
  suite: z.string(),
  suiteName: z.string(),
  tasks: z.array(
    z.strictObject({
      name: z.string(),
      dir: z.string(),
      variants: z.array(
        z.strictObject({
          name: z.string(),
          file: z.string(),
          sha256: z.string(),
          /** An impossible variant (suite.ts): never in a pass rate. Absent: a possible one. */
          impossible: z.literal(true).optional(),
        }),
      ),
      /** Every entry of the task folder when the eval started (task-files.ts); absent in older evals. */
      files: z.record(z.string(), z.string()).optional(),
      /** The limits this task's trials run with (trial-limits.ts); absent in older evals. */
      limits: z.record(z.string(), z.number()).optional(),
    }),
  ),
  models: z.array(
    z.strictObject({
      label: z.string(),
      /** The label as a trial-id part. */
      slug: z.string(),
      specs: z.array(z.string()).min(1),
      scripted: z.boolean(),
      /** Who played each role (model-specs.ts); absent in older evals. */
      roles: z
        .strictObject({
          work: z.array(z.string()),
          review: z.array(z.string()),
          control: z.array(z.string()),
          critique: z.array(z.string()),
        })
        .optional(),
    }),
  ),
  repeats: z.number().int().min(1),
  /** The suite's `limits:`, as given (each task's trials run with its `tasks[].limits`). */
  limits: z.record(z.string(), z.number()),
  budgetUsd: z.number().nonnegative().nullable(),
  concurrency: z.number().int().min(1),
  engine: z.enum(["local", "slurm"]),
  backend: z.string(),
  /** The tasks' checks are audited before the trials (scifi check-task); false: --no-audit; absent in older evals. */
  audit: z.boolean().optional(),
  trials: z.array(trialSchema),
});
export type EvalPlan = z.infer<typeof evalPlanSchema>;

export const evalFiles = (evalDir: string) => ({
  plan: join(evalDir, "eval.json"),
  summary: join(evalDir, "summary.json"),
  csv: join(evalDir, "summary.csv"),
  /** The variant table (SciFi Table 1 layout): runner/eval/variant-table.ts. */
  variantsCsv: join(evalDir, "summary-variants.csv"),
  /** The impossible variants' pass rates (runner/eval/impossible.ts); only when the plan has some. */
  impossibleCsv: join(evalDir, "summary-impossible.csv"),
  /** The pid lock of the process driving the eval (engine.ts driveEval). */
  lock: join(evalDir, "eval.lock"),
  trials: join(evalDir, "trials"),
  trial: (trialId: string) => join(evalDir, "trials", trialId),
  /** The trial's fresh copy of its task folder (the run's task folder). */
  copy: (trialId: string, task: string) => join(evalDir, "trials", trialId, task),
  result: (trialId: string) => join(evalDir, "trials", trialId, "result.json"),
  job: (trialId: string) => join(evalDir, "trials", trialId, "job.json"),
});

export function evalDirOf(home: string, evalId: string): string {
  return join(homePaths(home).evals, evalId);
}

export interface PlanOptions {
  suite: Suite;
  models: SuiteModel[];
  repeats: number;
  concurrency: number;
  budgetUsd: number | null;
  engine: "local" | "slurm";
  backend: string;
  /** Audit each task's checks before its trials (default true; false: --no-audit). */
  audit?: boolean;
  now?: Date;
}

/** The plan of a new eval: every (task, variant, model, repeat) as one trial, in a fixed order. */
export function makePlan(o: PlanOptions): EvalPlan {
  const now = o.now ?? new Date();
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "-");
  const evalId = `${stamp}-${nameSlug(o.suite.name)}-${randomBytes(3).toString("hex")}`;
  const models = modelSlugs(o.models);
  const trials: PlannedTrial[] = [];
  // Repeat-major order: with a budget or a kill, every cell has had its first repeats first.
  for (let repeat = 0; repeat < o.repeats; repeat++)
    for (const task of o.suite.tasks)
      for (const variant of task.variants)
        for (const model of models)
          trials.push({
            trialId: `${task.name}.${variant.name}.${model.slug}.r${repeat}`,
            task: task.name,
            variant: variant.name,
            model: model.label,
            repeat,
          });
  return {
    version: 1,
    evalId,
    createdAt: now.toISOString(),
    suite: o.suite.source,
    suiteName: o.suite.name,
    tasks: o.suite.tasks.map((t) => ({
      name: t.name,
      dir: t.dir,
      variants: t.variants,
      limits: { ...trialLimits(t, o.suite.limits) },
    })),
    models,
    repeats: o.repeats,
    limits: o.suite.limits as Record<string, number>,
    budgetUsd: o.budgetUsd,
    concurrency: o.concurrency,
    engine: o.engine,
    backend: o.backend,
    audit: o.audit ?? true,
    trials,
  };
}

/** A model label as a trial-id part: safe characters, unique in the eval (a short hash if needed). */
function modelSlugs(models: SuiteModel[]): EvalPlan["models"] {
  const used = new Set<string>();
  return models.map((m) => {
    let slug = m.label.replace(/^scripted(-openai)?:/, "scripted-").replace(/[^A-Za-z0-9_-]+/g, "-");
    slug = slug.replace(/-+/g, "-").replace(/^-|-$/g, "").slice(-60) || "model";
    if (used.has(slug)) slug = `${slug}-${createHash("sha256").update(m.label).digest("hex").slice(0, 6)}`;
    used.add(slug);
    return {
      label: m.label,
      slug,
      specs: m.specs,
      scripted: m.specs.every((s) => s.startsWith("scripted")),
    };
  });
}

export function writePlan(evalDir: string, plan: EvalPlan): void {
  writeJsonAtomic(evalFiles(evalDir).plan, plan, { mode: 0o644 });
}

export function readPlan(evalDir: string): EvalPlan {
  const file = evalFiles(evalDir).plan;
  if (!existsSync(file))
    throw new Error(`no eval plan at ${file}: is the eval id right? (evals/<id>/eval.json)`);
  const parsed = evalPlanSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
  if (!parsed.success) throw new Error(`${file} is not an eval plan: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** The spec a trial runs with: a model with several scripts takes them in turn by repeat. */
export function specOf(plan: EvalPlan, trial: PlannedTrial): string {
  const model = plan.models.find((m) => m.label === trial.model);
  if (!model) throw new Error(`trial ${trial.trialId}: model '${trial.model}' is not in the plan`);
  return model.specs[trial.repeat % model.specs.length] as string;
}
