// The eval's scheduler: a plan (plan.ts) is made once and written to eval.json; then every trial
// without a result.json (and, with `retryErrors`, every trial whose result is an `error`) runs, K at
// a time in this process, or each as a SLURM job (slurm-trials.ts). After every trial the summary
// (summary.json, the CSVs) is computed again from the trials' results: those read from their
// result.json files at the start and each one since as it was written (summary-files.ts; the same bytes as a
// computation from the files: test/eval/summary-fresh.e2e.test.ts); scheduling stops when
// the budget is spent; at the end the page is written. A killed eval loses only its running trials:
// `resumeEval` picks up the plan and runs what has no result.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadModelsConfig, ModelsConfigError } from "../llm/config.ts";
import { acquirePidLock, livePidOwner, type PidLockOwner } from "../pid-lock.ts";
import type { RunStatus } from "../run/session/status.ts";
import { refuseBusyTaskFolder, TaskFolderBusy } from "../task-folder-lock.ts";
import { auditTasks } from "./audits.ts";
import { type Bookkeeping, emptyBookkeeping } from "./bookkeeping.ts";
import {
  type ModelRoles,
  ModelSpecError,
  parseModelSpec,
  rolesOfConfig,
  rolesOfSpec,
  workModelsFile,
} from "./model-specs.ts";
import { writeEvalReport } from "./page.ts";
import {
  type EvalPlan,
  evalDirOf,
  evalFiles,
  makePlan,
  type PlannedTrial,
  readPlan,
  writePlan,
} from "./plan.ts";
import { absoluteSpec, loadSuite, type SuiteModel } from "./suite.ts";
import type { EvalSummary } from "./summary.ts";
import { readResults, writeSummary } from "./summary-files.ts";
import { firstDifference, taskFiles } from "./task-files.ts";
import { readTrialResult, runTrial } from "./trial.ts";
import type { TrialResult } from "./trial-result.ts";

export const DEFAULT_CONCURRENCY = 4;

export interface StartEvalOptions {
  home: string;
  suite: string;
  /** Model specs (`--models`); default: the suite file's `models`. Paths relative to `cwd`. */
  models?: string[];
  repeats?: number;
  concurrency?: number;
  budgetUsd?: number;
  slurm?: boolean;
  backend?: string;
  /** Audit each task's checks before its trials (default true; `--no-audit`: false, recorded). */
  audit?: boolean;
  cwd?: string;
}

/** Problems with what `scifi eval` was given (exit code 2). */
export class EvalInputError extends Error {
  override name = "EvalInputError";
}

/** Makes and writes the plan of a new eval; returns its folder and plan. */
export async function createEval(o: StartEvalOptions): Promise<{ evalDir: string; plan: EvalPlan }> {
  const suite = await loadSuite(o.suite, o.home);
  const cwd = o.cwd ?? process.cwd();
  let models: SuiteModel[] | undefined;
  try {
    // A `provider:model` spec stays as given: its models file is written once the eval has a folder.
    models = o.models
      ? o.models.map((spec) => ({
          label: spec,
          specs: [parseModelSpec(spec).kind === "provider" ? spec : absoluteSpec(spec, cwd)],
        }))
      : suite.models;
  } catch (error) {
    if (error instanceof ModelSpecError) throw new EvalInputError(error.message);
    throw error;
  }
  if (!models || models.length === 0)
    throw new EvalInputError(
      `no models: give --models A,B or list models: in the suite file (${suite.source})`,
    );
  const labels = models.map((m) => m.label);
  const dup = labels.find((l, i) => labels.indexOf(l) !== i);
  if (dup) throw new EvalInputError(`model '${dup}' is given twice`);
  for (const m of models)
    for (const spec of m.specs) {
      const file = spec.replace(/^scripted(?:-openai)?:/, "");
      if (parseModelSpec(spec).kind === "provider") continue;
      if (!spec.startsWith("replay:") && !existsSync(file))
        throw new EvalInputError(`model '${m.label}': no such file ${file}`);
    }
  const plan = makePlan({
    suite,
    models,
    repeats: o.repeats ?? suite.repeats ?? 1,
    concurrency: o.concurrency ?? suite.concurrency ?? DEFAULT_CONCURRENCY,
    budgetUsd: o.budgetUsd ?? suite.budgetUsd ?? null,
    engine: o.slurm ? "slurm" : "local",
    backend: o.backend ?? (o.slurm ? "auto" : "docker"),
    ...(o.audit === false ? { audit: false } : {}),
  });
  for (const task of plan.tasks) {
    // A folder a live run works in is mid-change (and, as root, lent to the sandbox user): its
    // trials would copy whatever the run has left there so far.
    try {
      refuseBusyTaskFolder(o.home, task.dir);
    } catch (error) {
      if (error instanceof TaskFolderBusy) throw new EvalInputError(`task ${task.name}: ${error.message}`);
      throw error;
    }
    task.files = await taskFiles(task.dir);
  }
  const evalDir = evalDirOf(o.home, plan.evalId);
  try {
    plan.models = plan.models.map((m) => withRoles(o.home, evalDir, m));
  } catch (error) {
    if (error instanceof ModelSpecError) throw new EvalInputError(error.message);
    throw error;
  }
  writePlan(evalDir, plan);
  return { evalDir, plan };
}

export interface DriveOptions {
  home: string;
  evalDir: string;
  plan: EvalPlan;
  /** Run the trials whose result is `error` again too. */
  retryErrors?: boolean;
  /** One line per event for the terminal (trial ended, budget stop). */
  log?: (line: string) => void;
  /** Shorter model retries (tests, the bench). */
  retry?: { maxRetries?: number; baseDelayMs?: number; maxDelayMs?: number; timeoutMs?: number };
  /** A local trial's live run status. */
  onTrialStatus?: (trial: PlannedTrial, status: RunStatus) => void;
  /**
   * Told, per trial, the time of the eval's own work around its run, by part (the bench); called
   * once the trial's result and the summary with it are written (tests read them there).
   */
  onBookkeeping?: (trialId: string, parts: Bookkeeping) => void;
  /** Told the milliseconds the audit of the tasks' checks took before the trials (the bench). */
  onAudited?: (ms: number) => void;
  /** SLURM engine: argv that starts scifi on the node (tests). */
  scifiCommand?: string[];
  /** SLURM engine: how often the eval looks at its jobs (ms). */
  pollMs?: number;
  /** Called once the eval's lock is held, before anything runs. */
  beforeStart?: () => void;
}

export interface EvalOutcome {
  evalDir: string;
  summary: EvalSummary;
  /** The eval's page (report.html), or why it could not be written. */
  page: { file?: string; error?: string };
  /** Trials this call ran (ids), in the order they ended. */
  ran: string[];
  stoppedByBudget: boolean;
}

/** Another process drives this eval now: a second one would take its trials' copies from under it. */
export class EvalBusy extends EvalInputError {
  override name = "EvalBusy";
}

/**
 * A planned model with the models file of each `provider:model` spec written (the site's, with
 * that work model) and who plays each role recorded.
 */
function withRoles(home: string, evalDir: string, m: EvalPlan["models"][number]): EvalPlan["models"][number] {
  const specs = m.specs.map((spec) =>
    parseModelSpec(spec).kind === "provider"
      ? workModelsFile(home, spec, join(evalDir, "models"), m.slug)
      : spec,
  );
  let each: ModelRoles[];
  try {
    each = specs.map((spec, i) =>
      parseModelSpec(m.specs[i] as string).kind === "provider"
        ? rolesOfConfig(loadModelsConfig(spec))
        : rolesOfSpec(spec),
    );
  } catch (error) {
    // A models file that does not load fails its trials as before (each an error naming it).
    if (error instanceof ModelsConfigError) return { ...m, specs };
    throw error;
  }
  const union = (key: keyof ModelRoles) => [...new Set(each.flatMap((r) => r[key]))];
  return {
    ...m,
    specs,
    roles: {
      work: union("work"),
      review: union("review"),
      control: union("control"),
      critique: union("critique"),
    },
  };
}

/** Runs every trial of the plan that has no result (or an error one, with retryErrors). */
export async function driveEval(o: DriveOptions): Promise<EvalOutcome> {
  const lock = evalFiles(o.evalDir).lock;
  const { release } = acquirePidLock<PidLockOwner & { evalId: string }>(
    lock,
    { evalId: o.plan.evalId },
    (owner) =>
      new EvalBusy(
        `eval ${o.plan.evalId} is being run by process ${owner.pid} on ${owner.host} (since ${owner.startedAt}); wait for it to end, or stop it and resume. If that process is gone (another machine that went away), delete ${lock}`,
      ),
  );
  try {
    o.beforeStart?.();
    return await driveLocked(o);
  } finally {
    release();
  }
}

async function driveLocked(o: DriveOptions): Promise<EvalOutcome> {
  const { plan, evalDir } = o;
  const log = o.log ?? (() => {});
  const results = readResults(evalDir, plan);
  const todo = plan.trials.filter((t) => {
    const r = results.get(t.trialId);
    return !r || (o.retryErrors === true && r.status === "error");
  });
  const spent = () => [...results.values()].reduce((s, r) => s + r.usd, 0);
  let stoppedByBudget = false;
  const ran: string[] = [];
  writeSummary(evalDir, plan, results, false);
  if (plan.engine === "local" && todo.length > 0) await pruneOrphans(o.home, plan.backend);
  // Each task's checks are audited before its trials (cached by content: a second eval reads them).
  if (plan.audit === true && todo.length > 0) {
    const t0 = performance.now();
    await auditTasks({ home: o.home, evalDir, plan, log });
    writeSummary(evalDir, plan, results, false);
    o.onAudited?.(performance.now() - t0);
  }
  const queue = [...todo];
  const next = (): PlannedTrial | undefined => {
    if (queue.length === 0) return undefined;
    if (plan.budgetUsd !== null && spent() >= plan.budgetUsd) {
      if (!stoppedByBudget)
        log(
          `budget spent: USD ${spent().toFixed(4)} of ${plan.budgetUsd}; ${queue.length} trial(s) not started (to run them: scifi eval --resume ${plan.evalId} --budget-usd <a larger budget>)`,
        );
      stoppedByBudget = true;
      return undefined;
    }
    return queue.shift();
  };
  const trialBookkeeping = new Map<string, Bookkeeping>();
  const ended = (result: TrialResult): void => {
    const parts = trialBookkeeping.get(result.trialId) ?? emptyBookkeeping();
    trialBookkeeping.delete(result.trialId);
    results.set(result.trialId, result);
    ran.push(result.trialId);
    writeSummary(evalDir, plan, results, stoppedByBudget, parts);
    o.onBookkeeping?.(result.trialId, parts);
    const done = [...results.values()].length;
    log(
      `${result.status.toUpperCase()} ${result.trialId} (${result.verdict}${result.status === "pass" ? "" : `: ${result.cause.slice(0, 200)}`}) [${done}/${plan.trials.length}]`,
    );
  };
  const runOne =
    plan.engine === "slurm"
      ? await slurmRunner(o)
      : (trial: PlannedTrial) =>
          runTrial({
            home: o.home,
            evalDir,
            plan,
            trial,
            ...(o.retry ? { retry: o.retry } : {}),
            ...(o.onTrialStatus ? { onStatus: (s: RunStatus) => o.onTrialStatus?.(trial, s) } : {}),
            onBookkeeping: (parts: Bookkeeping) => trialBookkeeping.set(trial.trialId, parts),
          });
  const worker = async (): Promise<void> => {
    for (let trial = next(); trial; trial = next()) ended(await runOne(trial));
  };
  await Promise.all(Array.from({ length: Math.min(plan.concurrency, Math.max(1, todo.length)) }, worker));
  const summary = writeSummary(evalDir, plan, results, stoppedByBudget);
  let page: EvalOutcome["page"];
  try {
    page = { file: writeEvalReport(evalDir) };
  } catch (error) {
    page = { error: error instanceof Error ? error.message : String(error) };
  }
  return { evalDir, summary, page, ran, stoppedByBudget };
}

/**
 * Why `scifi eval trial` must not run this trial now, or undefined: it has its result (only an
 * error is run again), a live local driver runs the eval's trials itself, or the trial's SLURM job
 * is live and this process is not that job. A second runner would replace the trial's copy under
 * the first one's run.
 */
export async function refuseTrialRun(
  evalDir: string,
  plan: EvalPlan,
  trialId: string,
): Promise<string | undefined> {
  const result = readTrialResult(evalDir, trialId);
  if (result && result.status !== "error")
    return `trial ${trialId} has its result (${result.status}, run ${result.runId}); only an error is run again (scifi eval --resume ${plan.evalId} --retry-errors)`;
  if (plan.engine === "local") {
    const owner = livePidOwner(evalFiles(evalDir).lock);
    return owner
      ? `eval ${plan.evalId} is being run by process ${owner.pid} (since ${owner.startedAt}), which runs its trials itself`
      : undefined;
  }
  const { otherLiveJob } = await import("./slurm-trials.ts");
  const job = await otherLiveJob(evalDir, trialId);
  return job
    ? `trial ${trialId} is being run by SLURM job ${job.jobId} (${job.state}); wait for it, or scancel it first`
    : undefined;
}

/** Starts a new eval and runs it. */
export async function runEval(
  o: StartEvalOptions &
    Omit<DriveOptions, "evalDir" | "plan" | "home"> & {
      onCreated?: (evalDir: string, plan: EvalPlan) => void;
    },
): Promise<EvalOutcome> {
  const { evalDir, plan } = await createEval(o);
  o.onCreated?.(evalDir, plan);
  return driveEval({ ...o, evalDir, plan });
}

/**
 * Continues an eval from its eval.json: only the trials without a result (and errors, if asked).
 * `budgetUsd` replaces the plan's budget (a budget stop is resumed with a larger one); nothing
 * else of the plan can change.
 */
export async function resumeEval(
  o: Omit<DriveOptions, "evalDir" | "plan"> & { evalId: string; budgetUsd?: number },
): Promise<EvalOutcome> {
  const evalDir = evalDirOf(o.home, o.evalId);
  if (!existsSync(evalFiles(evalDir).plan))
    throw new EvalInputError(
      `no eval '${o.evalId}' (no ${evalFiles(evalDir).plan}); evals live under <home>/evals/`,
    );
  const planned = readPlan(evalDir);
  await refuseChangedSuite(planned);
  await refuseRefusedSams(planned, o.home);
  if (o.budgetUsd === undefined || o.budgetUsd === planned.budgetUsd)
    return driveEval({ ...o, evalDir, plan: planned });
  const plan = { ...planned, budgetUsd: o.budgetUsd };
  // The new budget is written under the eval's lock, so a live eval's plan is never changed.
  return driveEval({ ...o, evalDir, plan, beforeStart: () => writePlan(evalDir, plan) });
}

/**
 * A resumed eval runs the task folders it was planned with: a variant whose file changed, or any
 * other entry of a task folder (a check asset, a sub-SAM, data), is refused.
 */
async function refuseChangedSuite(plan: EvalPlan): Promise<void> {
  const { sha256 } = await import("../sha256.ts");
  const { readFileSync } = await import("node:fs");
  for (const task of plan.tasks) {
    for (const v of task.variants) {
      const now = existsSync(v.file) ? sha256(readFileSync(v.file)) : "missing";
      if (now !== v.sha256)
        throw new EvalInputError(
          `${v.file} ${now === "missing" ? "is gone" : "changed"} since the eval started (its trials would not be comparable); restore it, or start a new eval`,
        );
    }
    if (!task.files) continue;
    const now = existsSync(task.dir) ? await taskFiles(task.dir) : undefined;
    const difference = now ? firstDifference(task.files, now) : "the folder is gone";
    if (difference)
      throw new EvalInputError(
        `the task folder ${task.dir} changed since the eval started: ${difference} (its trials would not be judged alike); restore it, or start a new eval`,
      );
  }
}

/**
 * A resumed eval's SAMs go through the one gate again (runner/sam/gate.ts), as `scifi run --resume`
 * does: a variant this scifi refuses (a rule added since the eval started) stops the resume, with
 * its diagnostics, before any trial runs.
 */
async function refuseRefusedSams(plan: EvalPlan, home: string): Promise<void> {
  const { checkSam } = await import("../sam/gate.ts");
  const { gateOptions } = await import("../skills/sam-gate.ts");
  const { formatDiagnostic } = await import("../sam/diagnostics.ts");
  const gate = gateOptions(home);
  const errors = plan.tasks
    .flatMap((task) => task.variants.map((v) => checkSam(v.file, gate)))
    .flatMap((result) => (result.ok ? [] : result.diagnostics.filter((d) => d.severity === "error")));
  if (errors.length > 0)
    throw new EvalInputError(
      `the eval's SAMs are not valid under this scifi's rules, so it is not resumed (start a new eval once they are fixed):\n${errors.map(formatDiagnostic).join("\n")}`,
    );
}

/** The sandboxes of trials whose eval was killed (SIGKILL runs no cleanup) are removed first. */
async function pruneOrphans(home: string, backendName: string): Promise<void> {
  const { getBackend } = await import("../sandbox/registry.ts");
  const backend = await getBackend(backendName).catch(() => undefined);
  await backend?.prune({ home }).catch(() => []);
}

async function slurmRunner(o: DriveOptions): Promise<(trial: PlannedTrial) => Promise<TrialResult>> {
  const { slurmTrialRunner } = await import("./slurm-trials.ts");
  return slurmTrialRunner(o);
}
