// Wiring for one run: the one path every way of running a task goes through (`scifi run`, the
// daemon's worker, the tests and the benchmark; `scifi submit` takes its SAM from `loadSam` here).
// It parses the SAM once, mints the run id once, applies the site policy, picks the backend, opens
// the gateway on the run's audit tape, loads the skills, adds the run's extensions (SLURM job tools
// for a `jobs: slurm` SAM, from runner/jobs) and starts or resumes the loop. `exitCodeOf` maps what
// it throws to the exit code the CLI and the worker return.
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { ApprovalGate, ApprovalGateOptions } from "../approval/gate.ts";
import type { AuditTape } from "../audit/tape.ts";
import { EXIT } from "../exit-codes.ts";
import { SubmitInputError } from "../jobs/submit.ts";
import { ModelsConfigError } from "../llm/config.ts";
import { ScriptError } from "../llm/scripted/script.ts";
import { homePaths } from "../paths.ts";
import { PolicyRefused } from "../policy/refused.ts";
import { newRunId } from "../run-id.ts";
import type { Diagnostic, SamDocument } from "../sam/types.ts";
import type { RunEnd, RunExtension } from "../tools/extension.ts";
import type { LimitConfig } from "./limits.ts";
import { effectiveLimits, type RunDeps, type RunResult, resumeRun, startRun } from "./run.ts";
import type { RunStatus } from "./status.ts";

export interface RunTaskOptions {
  home: string;
  /** SAM file, or a folder holding task.md. Omit with `resume`. */
  task?: string;
  resume?: string;
  backend?: string;
  /** `scripted:FILE`, `replay:RUN`, or a models config path. Default: the home's models.yaml. */
  model?: string;
  sitePolicy?: string;
  limits?: Partial<LimitConfig>;
  /** A run id chosen by the caller (the daemon needs it before the worker starts); default a fresh one. */
  runId?: string;
  /** Shorter retry settings for tests. */
  retry?: { maxRetries?: number; baseDelayMs?: number; maxDelayMs?: number; timeoutMs?: number };
  /** The caller's own additions to the run; a `jobs: slurm` SAM's job extension is added to them. */
  extensions?: readonly RunExtension[];
  onStatus?: (status: RunStatus) => void;
  /** A backend built by the caller instead of `backend` by name (tests: a proxy that pins test host names). */
  sandboxBackend?: RunDeps["backend"];
  /** A terminal's y/n for approval requests (`scifi run` on a TTY); absent: wait for approve/deny. */
  approvalPrompt?: ApprovalGateOptions["prompt"];
  /** Called once the run folder exists (before the loop starts). */
  onRunId?: (runId: string, dir: string) => void;
  /** Called once the run's report page is written at its end (or with why it could not be). */
  onReport?: (report: { file?: string; index?: string; error?: string }) => void;
}

/** Bad input the user can fix: exit 2. */
export class InvalidInput extends Error {
  override name = "InvalidInput";
  readonly diagnostics: Diagnostic[];
  /** The SAM file that did not parse, when that was the problem. */
  readonly samFile?: string;
  constructor(message: string, diagnostics: Diagnostic[] = [], samFile?: string) {
    super(message);
    this.diagnostics = diagnostics;
    if (samFile !== undefined) this.samFile = samFile;
  }
}

/**
 * The exit code for an error a run (or its setup) threw: 2 for input the user can fix (a bad task,
 * flag, policy refusal, models config or script), 1 for anything else. A run that ended has its
 * code from its outcome (exitCodeOfOutcome in runner/exit-codes.ts).
 */
export function exitCodeOf(error: unknown): number {
  if (
    error instanceof InvalidInput ||
    error instanceof PolicyRefused ||
    error instanceof ModelsConfigError ||
    error instanceof ScriptError ||
    error instanceof SubmitInputError
  ) {
    return EXIT.usage;
  }
  return EXIT.failed;
}

/** The SAM of a task file or folder (its task.md), parsed once; InvalidInput when it is not a valid SAM. */
export async function loadSam(task: string): Promise<SamDocument> {
  const file = samFileOf(task);
  const { parseSam } = await import("../sam/parse.ts");
  const parsed = await parseSam(file);
  if (!parsed.ok) {
    throw new InvalidInput(
      `${file} is not a valid SAM (run 'scifi validate ${task}')`,
      parsed.diagnostics,
      file,
    );
  }
  return parsed.sam;
}

export async function runTask(options: RunTaskOptions): Promise<RunResult> {
  if (options.resume) return resumeTask(options, options.resume);
  if (!options.task && options.model?.startsWith("replay:")) {
    throw new InvalidInput(
      "--model replay:RUN runs a task again: give its SAM file or folder as it was when the recorded run started (a fresh copy: the recorded run changed its own task folder)",
    );
  }
  if (!options.task) throw new InvalidInput("give a SAM task file (or its folder), or --resume RUN");
  const sam = await loadSam(options.task);
  const backend = options.sandboxBackend ?? (await backendNamed(options.backend ?? "docker"));
  const model = options.model ?? defaultModel(options.home);
  const runId = options.runId ?? newRunId(sam.metadata.name);
  return aroundLoop(options, sam, runId, undefined, async (run) =>
    startRun(
      { home: options.home, sam, limits: options.limits, runId, model },
      {
        ...(run.approvals ? { approval: run.approvals } : {}),
        ...(await deps(
          run.options,
          backend,
          model,
          sam,
          run.extensions,
          effectiveLimits(sam, options.limits).walltimeSec * 1000,
        )),
        onCreated: (dir) => {
          run.created(dir);
          options.onRunId?.(runId, dir);
        },
      },
    ),
  );
}

async function resumeTask(options: RunTaskOptions, runId: string): Promise<RunResult> {
  const { readState } = await import("./state.ts");
  const { openRunFolder, readSamJson } = await import("./records.ts");
  const folder = openRunFolder(options.home, runId);
  if (!existsSync(folder.files.state)) {
    throw new InvalidInput(`no run '${runId}' under ${homePaths(options.home).runs} (no state.json there)`);
  }
  const state = readState(folder.files.state);
  const backend = options.sandboxBackend ?? (await backendNamed(options.backend ?? state.backend));
  // A run still driven by a live process is refused before anything is touched, its sandbox too
  // (resumeRun takes the lock itself; this only checks it earlier).
  const { refuseLiveRun } = await import("./run-lock.ts");
  refuseLiveRun(folder);
  // The dead process's sandbox is still there (SIGKILL runs no cleanup): remove this home's
  // orphans whose runner is gone before a fresh sandbox takes over the task folder.
  await backend.prune({ home: options.home }).catch(() => []);
  const model = options.model ?? state.model ?? defaultModel(options.home);
  // The SAM as parsed at the run's start (the run folder's copy), never the file as it is now.
  const sam = existsSync(folder.files.samJson) ? readSamJson(folder) : undefined;
  options.onRunId?.(state.runId, folder.dir);
  return aroundLoop(options, sam, runId, folder.dir, async (run) =>
    resumeRun(options.home, runId, {
      ...(run.approvals ? { approval: run.approvals } : {}),
      ...(await deps(
        run.options,
        backend,
        model,
        sam,
        run.extensions,
        state.limits.walltimeSec * 1000 - state.spent.elapsedMs,
      )),
    }),
  );
}

/** What the loop gets from the pieces a start and a resume share. */
interface AroundLoop {
  approvals: ApprovalGate | undefined;
  extensions: RunExtension[];
  /** The caller's options with the change tracker watching its statuses. */
  options: RunTaskOptions;
  /** Tells the change tracker where the run folder is. */
  created(dir: string): void;
}

/**
 * What a start and a resume share: the approval gate and the extensions (both need the SAM; a resume
 * from an old run folder without one gets only the caller's extensions), and the change snapshots
 * and the extensions' end around the loop.
 */
async function aroundLoop(
  options: RunTaskOptions,
  sam: SamDocument | undefined,
  runId: string,
  resumedDir: string | undefined,
  loop: (run: AroundLoop) => Promise<RunResult>,
): Promise<RunResult> {
  const approvals = sam ? await approvalGateFor(options, sam, runId) : undefined;
  const extensions = sam
    ? await extensionsFor(options, sam, runId, resumedDir !== undefined, approvals)
    : [...(options.extensions ?? [])];
  const changes = await changesTracker(sam ? dirname(sam.file) : undefined, resumedDir);
  const watched = { ...options, onStatus: changes.onStatus(options.onStatus) };
  return changes.around(options, () =>
    endingExtensions(extensions, () =>
      loop({ approvals, extensions, options: watched, created: (dir) => changes.created(dir) }),
    ),
  );
}

/**
 * The run's change snapshots (runner/report/changes.ts) and its report. The start snapshot is taken
 * before the loop (a resumed run keeps the one its start took); one after each work pass, as the
 * checks begin (the work sandbox is gone then); one at the end, with small images. Then the report
 * page and the runs index are written. Nothing here fails the run: a snapshot that cannot be taken is
 * partial, a report that cannot be written is reported through onReport.
 */
async function changesTracker(taskDir: string | undefined, resumedDir: string | undefined) {
  const changes = await import("../report/changes.ts");
  let runDir = resumedDir;
  const start =
    taskDir && !(resumedDir && existsSync(join(changes.changesDir(resumedDir), "start.json")))
      ? await changes.snapshotTaskFolder(taskDir, "start")
      : undefined;
  const pending: Promise<void>[] = [];
  let lastCheck = -1;
  const created = (dir: string): void => {
    runDir = dir;
    if (start) changes.writeSnapshot(dir, start, "start");
  };
  if (resumedDir) created(resumedDir);
  return {
    created,
    onStatus:
      (inner: RunTaskOptions["onStatus"]) =>
      (status: RunStatus): void => {
        if (status.phase === "checks" && status.iteration !== lastCheck && taskDir && runDir) {
          lastCheck = status.iteration;
          const dir = runDir;
          pending.push(
            changes
              .snapshotTaskFolder(taskDir, `after the work of iteration ${status.iteration}`, {
                ...(start ? { since: start } : {}),
              })
              .then((snap) => changes.writeSnapshot(dir, snap, `iteration-${status.iteration}`))
              .catch(() => undefined),
          );
        }
        inner?.(status);
      },
    around: async (options: RunTaskOptions, run: () => Promise<RunResult>): Promise<RunResult> => {
      try {
        const result = await run();
        // A resumed run that got to an end no longer stopped on the error recorded before.
        if (runDir) rmSync(join(runDir, RUN_ERROR_FILE), { force: true });
        return result;
      } catch (error) {
        if (runDir) recordRunError(runDir, error);
        throw error;
      } finally {
        await Promise.all(pending);
        if (runDir) {
          if (taskDir) {
            // With the first page of each PDF the run made, rendered in a sandbox (pdf-pages.ts).
            const { endSnapshotWithPdfPages } = await import("../report/pdf-pages.ts");
            const end = await endSnapshotWithPdfPages(
              taskDir,
              runDir,
              options.sandboxBackend ?? options.backend,
            );
            try {
              changes.writeSnapshot(runDir, end, "end");
            } catch {
              // The report says the end snapshot is missing.
            }
          }
          options.onReport?.(await writeReports(options.home, runDir));
        }
      }
    },
  };
}

/**
 * What stopped a run without an outcome: `start` when a sandbox could not be started (the backend
 * or its image is missing: resuming cannot help, the cause must be fixed first), `replay` when a
 * replay diverged from its recording (the task differs there), `other` for anything else (a crash
 * the run can be resumed from).
 */
export type RunErrorKind = "start" | "replay" | "other";

export function runErrorKind(error: unknown): RunErrorKind {
  if (!(error instanceof Error)) return "other";
  if (error.name === "ReplayDivergence") return "replay";
  if (
    error.name === "SandboxUnavailable" ||
    /cannot (create|start) the (container|sandbox|instance)|apptainer: cannot start|image .* not found|No such image/i.test(
      error.message,
    )
  )
    return "start";
  return "other";
}

/** The run folder's `error.json`: why a run stopped without an outcome (the report shows it). */
export const RUN_ERROR_FILE = "error.json";

function recordRunError(runDir: string, error: unknown): void {
  try {
    const record = {
      time: new Date().toISOString(),
      kind: runErrorKind(error),
      name: error instanceof Error ? error.name : "Error",
      message: error instanceof Error ? error.message : String(error),
    };
    writeFileSync(join(runDir, RUN_ERROR_FILE), `${JSON.stringify(record)}\n`);
  } catch {
    // The CLI prints the error itself; the report then says only that the run has no end.
  }
}

/** Runs folders with more entries get no index rebuilt at each run's end. */
const MAX_INDEX_RUNS_AT_END = 300;

/** The run's report page and the runs index, rebuilt at a run's end. */
async function writeReports(
  home: string,
  runDir: string,
): Promise<{ file?: string; index?: string; error?: string }> {
  try {
    const { REPORT_FILE, writeIndex, writeRunReport } = await import("../report/report.ts");
    const { runFiles } = await import("../paths.ts");
    const file = join(runDir, REPORT_FILE);
    writeRunReport(runFiles(runDir).audit, file, home);
    const runs = dirname(runDir);
    // The index reads every run's tape: past a few hundred runs that is for `scifi report --index`,
    // not for the end of each run.
    if (readdirSync(runs).length > MAX_INDEX_RUNS_AT_END) return { file };
    try {
      const index = writeIndex(runs, join(runs, "index.html")).file;
      return { file, index };
    } catch {
      return { file };
    }
  } catch (error) {
    return { error: `the report could not be written: ${(error as Error).message}` };
  }
}

/**
 * The run's approval gate when the SAM or the site policy names any action (docs/approval.md);
 * undefined when nothing needs a person.
 */
async function approvalGateFor(
  options: RunTaskOptions,
  sam: SamDocument,
  runId: string,
): Promise<ApprovalGate | undefined> {
  const { loadSitePolicy, sitePolicyPath } = await import("../policy/site.ts");
  const { requiredActions } = await import("../approval/actions.ts");
  const { ApprovalGate } = await import("../approval/gate.ts");
  const site = loadSitePolicy(
    sitePolicyPath(options.home, options.sitePolicy),
    options.sitePolicy !== undefined,
  ).policy;
  const required = requiredActions(sam.metadata.approval, site.approvalRequired);
  if (required.length === 0) return undefined;
  const poll = Number(process.env.SCIFI_APPROVAL_POLL_MS);
  return new ApprovalGate({
    home: options.home,
    runId,
    required,
    siteRequired: site.approvalRequired ?? [],
    timeoutSec: sam.metadata.approvalTimeoutSec ?? site.approvalTimeoutSec,
    ...(site.onApproval ? { onApproval: site.onApproval } : {}),
    ...(poll > 0 ? { pollMs: poll } : {}),
    ...(options.approvalPrompt ? { prompt: options.approvalPrompt } : {}),
  });
}

/** The caller's extensions, plus the SLURM job tools when the SAM asks for `jobs: slurm`. */
async function extensionsFor(
  options: RunTaskOptions,
  sam: SamDocument,
  runId: string,
  resume: boolean,
  approvals: ApprovalGate | undefined,
): Promise<RunExtension[]> {
  const own = [...(options.extensions ?? [])];
  // A host list, or network: true (Apptainer goes through the run's proxy): every connection the
  // proxy sees or the capture catches goes on the history.
  if (sam.metadata.network || sam.metadata.networkHosts?.length) {
    const { networkRecordsExtension } = await import("../network/records.ts");
    own.push(networkRecordsExtension(runId));
  }
  // `network` in approval: a host not on the list can be asked for, and approved, at run time.
  if (sam.metadata.networkHosts?.length && approvals?.requires("network")) {
    const { hostApprovalExtension } = await import("../network/approve-hosts.ts");
    const { loadSitePolicy, sitePolicyPath } = await import("../policy/site.ts");
    const site = loadSitePolicy(
      sitePolicyPath(options.home, options.sitePolicy),
      options.sitePolicy !== undefined,
    ).policy;
    const poll = Number(process.env.SCIFI_APPROVAL_POLL_MS);
    own.push(
      hostApprovalExtension({
        home: options.home,
        runId,
        task: sam.metadata.name,
        listed: sam.metadata.networkHosts,
        site,
        gate: approvals,
        ...(poll > 0 ? { pollMs: poll } : {}),
      }),
    );
  }
  // A run that ended (with an outcome) no longer waits: what nobody decided leaves `scifi approvals`.
  if (approvals) {
    own.push({
      end: async (outcome) => {
        if (outcome) approvals.withdrawPending(`the run ended ${outcome.status}`);
      },
    });
  }
  if (sam.metadata.jobs !== "slurm") return own;
  const { jobsExtension } = await import("../jobs/run-jobs.ts");
  const { sitePolicyPath } = await import("../policy/site.ts");
  const jobs = jobsExtension({
    home: options.home,
    runId,
    sam,
    sitePolicyFile: sitePolicyPath(options.home, options.sitePolicy),
    resume,
    ...(approvals ? { approvals } : {}),
  });
  return jobs ? [...own, jobs] : own;
}

/** Runs the loop, then tells every extension how it ended (also when it threw: no outcome then). */
async function endingExtensions(
  extensions: readonly RunExtension[],
  run: () => Promise<RunResult>,
): Promise<RunResult> {
  let outcome: RunEnd | undefined;
  try {
    const result = await run();
    outcome = result.outcome;
    return result;
  } finally {
    for (const extension of extensions) await extension.end?.(outcome);
  }
}

async function backendNamed(name: string): Promise<RunDeps["backend"]> {
  const { backendNames, getBackend } = await import("../sandbox/registry.ts");
  if (!backendNames().includes(name)) {
    throw new InvalidInput(`unknown sandbox backend '${name}'; valid backends: ${backendNames().join(", ")}`);
  }
  return getBackend(name);
}

async function deps(
  options: RunTaskOptions,
  backend: RunDeps["backend"],
  model: string,
  sam: SamDocument | undefined,
  extensions: readonly RunExtension[],
  /** Wall time the run has left when the loop opens the gateway (at its start). */
  wallLeftMs: number,
): Promise<RunDeps> {
  const { loadSitePolicy, sitePolicyPath } = await import("../policy/site.ts");
  const { resolveSpec } = await import("../policy/resolve.ts");
  const { createModel } = await import("../llm/create-model.ts");
  const site = loadSitePolicy(
    sitePolicyPath(options.home, options.sitePolicy),
    options.sitePolicy !== undefined,
  );
  // The live display's last status, so the gateway's notice (a long retry-after it waits for) is
  // shown with it, and cleared by the next status the loop sends.
  let last: RunStatus | undefined;
  const onStatus = options.onStatus;
  return {
    backend,
    resolveSpec: (sam, runId, grant) =>
      resolveSpec(sam, site.policy, { home: options.home, runId, ...grant }),
    openModel: (audit: AuditTape, budget) =>
      createModel(model, audit, {
        budget,
        home: options.home,
        // The loop opens the gateway as the run starts (or resumes): its wall-time deadline.
        deadline: Date.now() + Math.max(0, wallLeftMs),
        ...(onStatus ? { onNotice: (notice) => last && onStatus({ ...last, notice }) } : {}),
        ...(options.retry ? { retry: options.retry } : {}),
      }),
    skills: await skillsFor(options.home, sam, site.policy.prescanAddsSkills),
    memoryTokens: site.policy.memoryTokens,
    extensions,
    ...(onStatus
      ? {
          onStatus: (status: RunStatus) => {
            // A result is said once: a later notice repeats the status, not the result.
            const { result: _said, ...kept } = status;
            last = kept;
            onStatus(status);
          },
        }
      : {}),
  };
}

/**
 * The skills of a run. The SAM's `skills:` list is the grant: those skills go to its work agent. The
 * pre-scan's index holds only them, unless the site policy's `prescanAddsSkills` lets it add others
 * from the whole index (those its grants allow).
 */
async function skillsFor(
  home: string,
  sam: SamDocument | undefined,
  prescanAdds: boolean,
): Promise<RunDeps["skills"]> {
  const { loadSkills, skillIndex, renderSkillIndex, skillText } = await import("../skills/index.ts");
  const { grantsOf, skillDirs } = await import("../skills/library.ts");
  const grants = sam ? grantsOf(sam.metadata) : new Set<never>();
  const { skills } = loadSkills(skillDirs(homePaths(home).skills));
  const all = skillIndex(skills, grants);
  const requested = sam?.metadata.skills ?? [];
  const granted = requested.filter((name) => all.some((entry) => entry.name === name));
  const index = prescanAdds ? all : all.filter((entry) => granted.includes(entry.name));
  return {
    index: index.length > 0 ? renderSkillIndex(index) : "(no skills available for this task)",
    names: index.map((entry) => entry.name),
    granted,
    prescanAdds,
    text: (name) => skillText(skills, name),
  };
}

function samFileOf(task: string): string {
  const path = resolve(task);
  if (!existsSync(path)) throw new InvalidInput(`no such task file or folder: ${task}`);
  if (statSync(path).isDirectory()) {
    const file = join(path, "task.md");
    if (!existsSync(file))
      throw new InvalidInput(`${task} is a folder without a task.md; give the SAM file itself`);
    return file;
  }
  return path;
}

function defaultModel(home: string): string {
  const config = homePaths(home).modelsConfig;
  if (!existsSync(config)) {
    throw new InvalidInput(
      `no model given and no models config at ${config}; pass --model scripted:FILE, --models-config FILE, or create ${config} (see docs/models.md)`,
    );
  }
  return config;
}
