// The durable record of one eval trial: `evals/<eval id>/trials/<trial id>/result.json`, written
// atomically when the trial ends. A leaf of the eval folder: the eval writes it; the statistics,
// the eval report page, `scifi export` and `scifi evolve` read it. It is the contract between them,
// so it changes only with a new `version` (docs/eval.md documents every field).
import { z } from "zod";

/** What ended a trial. `error` (infrastructure: the sandbox died, the runner crashed) is counted apart from `fail`. */
export const TRIAL_STATUSES = ["pass", "fail", "error"] as const;
export type TrialStatus = (typeof TRIAL_STATUSES)[number];

export const trialResultSchema = z.strictObject({
  version: z.literal(1),
  evalId: z.string().min(1),
  /** `<task>.<variant>.<model>.r<repeat>`, unique in the eval, safe as a folder name. */
  trialId: z.string().regex(/^[A-Za-z0-9._-]{1,200}$/),
  task: z.string().min(1),
  /** Description level or variant name (`nl`, `st`, `ex`, or `default` when the task has one SAM). */
  variant: z.string().min(1),
  /** Model spec as given to `scifi eval --models` (e.g. `scripted:models/a.yaml`, a models.yaml name). */
  model: z.string().min(1),
  /** Whether the model is the scripted model (always labelled in pages and exports). */
  scripted: z.boolean(),
  repeat: z.number().int().nonnegative(),
  status: z.enum(TRIAL_STATUSES),
  /** The run's verdict word (`PASSED`, `FAILED`, `BLOCKED`, `LIMIT`, `CANCELLED`, `ERROR`, ...). */
  verdict: z.string(),
  exitCode: z.number().int(),
  /** Why the run ended, in words (a limit's name, the failing check, the infrastructure error). */
  cause: z.string(),
  iterations: z.number().int().nonnegative(),
  wallMs: z.number().nonnegative(),
  tokens: z.strictObject({
    input: z.number().int().nonnegative(),
    output: z.number().int().nonnegative(),
    cacheRead: z.number().int().nonnegative(),
    cacheWrite: z.number().int().nonnegative(),
  }),
  /** cacheRead / (input + cacheRead + cacheWrite); 0 when there was no input. */
  cacheReadShare: z.number().min(0).max(1),
  /** USD the trial cost: this run and every earlier attempt (listed in `earlier`) together. */
  usd: z.number().nonnegative(),
  /**
   * Runs this trial started before the one counted, each paid for: an `error` retried with
   * --retry-errors, or an attempt a kill of the eval cut short (`interrupted`). Absent: none.
   */
  earlier: z
    .array(
      z.strictObject({
        runId: z.string(),
        usd: z.number().nonnegative(),
        ending: z.enum(["error", "interrupted"]),
        cause: z.string(),
      }),
    )
    .optional(),
  toolCalls: z.number().int().nonnegative(),
  toolRejections: z.number().int().nonnegative(),
  approvalsWaited: z.number().int().nonnegative(),
  /**
   * The run's integrity events by kind (docs/integrity.md); `{}`: none. Absent in results written
   * before it existed (those trials are left out of the integrity figures, never read as none).
   */
  integrity: z.record(z.string().regex(/^[a-z_]{1,40}$/), z.number().int().nonnegative()).optional(),
  /** The scifi run behind the trial: its id and folder (absolute), and its audit tape's head. */
  runId: z.string(),
  runDir: z.string(),
  tapeHead: z.string().optional(),
  startedAt: z.string(),
  endedAt: z.string(),
});

export type TrialResult = z.infer<typeof trialResultSchema>;
