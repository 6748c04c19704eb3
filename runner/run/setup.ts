// Wiring for one run: the one path every way of running a task goes through (`scifi run`, the
// daemon's worker, the tests and the benchmark; `scifi submit` takes its SAM from `loadSam` here).
// It puts the SAM through the one gate (runner/sam/gate.ts) once, mints the run id once, applies
// the site policy, picks the backend, opens the gateway on the run's audit tape, loads the skills,
// adds the run's extensions (SLURM job tools for a `jobs: slurm` SAM, from runner/jobs) and starts
// or resumes the run (start.ts). What it throws becomes an exit code in errors.ts; the change
// snapshots and the report are run-end-records.ts.
import { existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { ApprovalGate, ApprovalGateOptions } from "../approval/gate.ts";
import type { AuditTape } from "../audit/tape.ts";
import { effectiveCritiqueMode } from "../critique/mode.ts";
import type { CritiqueMode } from "../critique/schema.ts";
import type { RunEnd, RunExtension } from "../extension/run-extension.ts";
import type { Model, ModelRequest } from "../llm/types.ts";
import { homePaths } from "../paths.ts";
import type { SitePolicy } from "../policy/site.ts";
import type { LimitConfig, RunStarter, RunState } from "../run-folder/state.ts";
import { newRunId } from "../run-id.ts";
import type { SamDocument } from "../sam/types.ts";
import { checkViewKinds } from "./checks/check-view.ts";
import type { RunDeps, RunResult } from "./session/deps.ts";
import { InvalidInput } from "./session/errors.ts";
import { changesTracker } from "./session/run-end-records.ts";
import type { RunStatus } from "./session/status.ts";
import { resumeRun, startRun } from "./start.ts";
import { type HelperFolder, withHelperMounts } from "./task-folder/helper-mounts.ts";
import { checkCopyMaxBytes } from "./task-folder/task-folder.ts";

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
  /** Aborted with a RunCancelled as its reason: the run ends `cancelled` (the daemon's cancel). */
  signal?: AbortSignal;
  /** The tool that reads the run's outcome and never resumes it (check-task, eval): it takes no pause. */
  startedBy?: RunStarter;
}

/**
 * The SAM of a task file or folder (its task.md), through the one gate (runner/sam/gate.ts: what
 * `scifi validate` reports, skill names against `home`'s library included); InvalidInput with every
 * diagnostic when validate would report an error. Nothing is created before it.
 */
export async function loadSam(task: string, home: string): Promise<SamDocument> {
  const file = samFileOf(task);
  const { gateSamFile } = await import("../skills/sam-gate.ts");
  const { SamRefused } = await import("../sam/gate.ts");
  try {
    return gateSamFile(file, home);
  } catch (error) {
    if (!(error instanceof SamRefused)) throw error;
    throw new InvalidInput(
      `${file} is not a valid SAM (run 'scifi validate ${task}')`,
      error.diagnostics,
      file,
    );
  }
}

/**
 * A resume runs the SAM as recorded at its start, so that copy (the run folder's pristine SAM files
 * and check assets, laid out as in the task folder) goes through the gate again: a run whose SAM
 * the gate refuses now (a rule added since it started) is refused, with the diagnostics, before
 * anything is pruned, locked or appended. Diagnostics name the task folder's paths.
 */
async function gateRecordedSam(
  home: string,
  runId: string,
  state: RunState,
  taskDir: string,
  pristineDir: string,
): Promise<void> {
  const { gateSamFile } = await import("../skills/sam-gate.ts");
  const { SamRefused } = await import("../sam/gate.ts");
  // The root SAM is the first SAM file the pristine copy holds (task-folder.ts pristineRequests).
  const root = state.pristine?.files.find((f) => f.kind === "sam");
  const copy = root ? join(pristineDir, root.rel) : undefined;
  if (!copy || !existsSync(copy))
    throw new InvalidInput(
      `run '${runId}' cannot be resumed: the runner's copy of its SAM is missing from ${pristineDir}; start the task again`,
    );
  try {
    gateSamFile(copy, home);
  } catch (error) {
    if (!(error instanceof SamRefused)) throw error;
    const inTask = (file: string) =>
      file.startsWith(`${pristineDir}/`) ? join(taskDir, file.slice(pristineDir.length + 1)) : file;
    throw new InvalidInput(
      `run '${runId}' cannot be resumed: its SAM as recorded at the run's start (${copy}) is not valid under this scifi's rules; fix the SAM, check it with scifi validate ${state.samFile}, and start the task again`,
      error.diagnostics.map((d) => ({ ...d, file: inTask(d.file) })),
      state.samFile,
    );
  }
}

export async function runTask(options: RunTaskOptions): Promise<RunResult> {
  if (options.resume) return resumeTask(options, options.resume);
  if (!options.task && options.model?.startsWith("replay:")) {
    throw new InvalidInput(
      "--model replay:RUN runs a task again: give its SAM file or folder as it was when the recorded run started (a fresh copy: the recorded run changed its own task folder)",
    );
  }
  if (!options.task) throw new InvalidInput("give a SAM task file (or its folder), or --resume RUN");
  const sam = await loadSam(options.task, options.home);
  const backend = options.sandboxBackend ?? (await backendNamed(options.backend ?? "docker"));
  const model = options.model ?? defaultModel(options.home);
  const runId = options.runId ?? newRunId(sam.metadata.name);
  const inputs = await runInputs(options);
  return aroundLoop(inputs, sam, runId, undefined, async (run) =>
    startRun(
      {
        home: options.home,
        sam,
        limits: options.limits,
        runId,
        model,
        ...(options.startedBy ? { startedBy: options.startedBy } : {}),
      },
      {
        ...(await run.deps(backend, model)),
        preflight: () => checkScript(model),
        onCreated: (dir) => {
          run.created(dir);
          options.onRunId?.(runId, dir);
        },
      },
    ),
  );
}

/**
 * A scripted model's script is read before anything is made: a mistyped path or a bad script is
 * refused (exit 2) without a run folder, a report or an error.json.
 */
async function checkScript(model: string): Promise<void> {
  const match = /^scripted(?:-openai)?:(.+)$/.exec(model);
  if (!match?.[1]) return;
  const { loadScript } = await import("../llm/scripted/script.ts");
  loadScript(match[1]);
}

async function resumeTask(options: RunTaskOptions, runId: string): Promise<RunResult> {
  const { readState } = await import("../run-folder/state.ts");
  const { openRunFolder, readSamJson, readSpecJson } = await import("../run-folder/folder.ts");
  const folder = openRunFolder(options.home, runId);
  if (!existsSync(folder.files.state)) {
    throw new InvalidInput(`no run '${runId}' under ${homePaths(options.home).runs} (no state.json there)`);
  }
  const state = readState(folder.files.state);
  const backend = options.sandboxBackend ?? (await backendNamed(options.backend ?? state.backend));
  // A run still driven by a live process is refused before anything is touched, its sandbox too
  // (resumeRun takes the lock itself; this only checks it earlier).
  const { refuseLiveRun } = await import("./task-folder/run-lock.ts");
  refuseLiveRun(folder);
  // Every run folder this scifi writes has the SAM as parsed at its start; resuming without it would
  // prune sandboxes and then fail, so it is refused before anything is pruned.
  if (!existsSync(folder.files.samJson)) {
    throw new InvalidInput(
      `run '${runId}' cannot be resumed: its run folder has no sam.json (the SAM as parsed at its start); start the task again`,
    );
  }
  await gateRecordedSam(options.home, runId, state, readSpecJson(folder).taskDir, folder.files.pristine);
  // The dead process's sandbox is still there (SIGKILL runs no cleanup): remove this home's
  // orphans whose runner is gone before a fresh sandbox takes over the task folder.
  await backend.prune({ home: options.home }).catch(() => []);
  const model = options.model ?? state.model ?? defaultModel(options.home);
  // The SAM as parsed at the run's start (the run folder's copy), never the file as it is now.
  const sam = readSamJson(folder);
  options.onRunId?.(state.runId, folder.dir);
  const inputs = await runInputs(options);
  return aroundLoop(inputs, sam, runId, folder.dir, async (run) =>
    resumeRun(options.home, runId, await run.deps(backend, model)),
  );
}

/** What every part of a run's wiring reads from outside, read once: the options, the site policy. */
interface RunInputs {
  options: RunTaskOptions;
  site: SitePolicy;
  sitePolicyFile: string;
  /** `SCIFI_APPROVAL_POLL_MS` (tests): how often a waiting gate looks for a decision. */
  pollMs: number | undefined;
}

async function runInputs(options: RunTaskOptions): Promise<RunInputs> {
  const { loadSitePolicy, sitePolicyPath } = await import("../policy/site.ts");
  const sitePolicyFile = sitePolicyPath(options.home, options.sitePolicy);
  const site = loadSitePolicy(sitePolicyFile, options.sitePolicy !== undefined).policy;
  const poll = Number(process.env.SCIFI_APPROVAL_POLL_MS);
  // The checks' settings are a person's, read before anything runs: a typo must not end a run after
  // its work pass has spent (SCIFI_CHECK_VIEW, SCIFI_CHECK_COPY_MAX_BYTES).
  try {
    checkViewKinds();
    checkCopyMaxBytes();
  } catch (error) {
    throw new InvalidInput((error as Error).message);
  }
  return { options, site, sitePolicyFile, pollMs: poll > 0 ? poll : undefined };
}

/** What the loop gets from the pieces a start and a resume share. */
interface AroundLoop {
  /** The run's dependencies, composed once for a start or a resume. */
  deps(backend: RunDeps["backend"], model: string): Promise<RunDeps>;
  /** Tells the change tracker where the run folder is. */
  created(dir: string): void;
}

/**
 * What a start and a resume share: the approval gate, the extensions, the run's dependencies, and
 * the change snapshots and the extensions' end around the loop.
 */
async function aroundLoop(
  inputs: RunInputs,
  sam: SamDocument,
  runId: string,
  resumedDir: string | undefined,
  loop: (run: AroundLoop) => Promise<RunResult>,
): Promise<RunResult> {
  const { options } = inputs;
  const approvals = await approvalGateFor(inputs, sam, runId);
  const extensions = await extensionsFor(inputs, sam, runId, resumedDir !== undefined, approvals);
  const changes = await changesTracker(dirname(sam.file), resumedDir);
  const onStatus = changes.onStatus(options.onStatus);
  return changes.around(options, () =>
    endingExtensions(extensions, () =>
      loop({
        deps: async (backend, model) => ({
          ...(approvals ? { approval: approvals } : {}),
          ...(await deps(inputs, onStatus, backend, model, sam, extensions)),
        }),
        created: (dir) => changes.created(dir),
      }),
    ),
  );
}

/**
 * The run's approval gate when the SAM or the site policy names any action (docs/approval.md);
 * undefined when nothing needs a person.
 */
async function approvalGateFor(
  { options, site, pollMs }: RunInputs,
  sam: SamDocument,
  runId: string,
): Promise<ApprovalGate | undefined> {
  const { requiredActions } = await import("../sam/approval-actions.ts");
  const { ApprovalGate } = await import("../approval/gate.ts");
  const required = requiredActions(sam.metadata.approval, site.approvalRequired);
  // `critique: approve`: a PASS with likely mismatches waits at the same gate, action `critique`.
  if (critiqueModeOf(sam, site) === "approve" && !required.includes("critique")) required.push("critique");
  if (required.length === 0) return undefined;
  return new ApprovalGate({
    home: options.home,
    runId,
    required,
    siteRequired: site.approvalRequired ?? [],
    timeoutSec: sam.metadata.approvalTimeoutSec ?? site.approvalTimeoutSec,
    ...(site.onApproval ? { onApproval: site.onApproval } : {}),
    ...(pollMs ? { pollMs } : {}),
    ...(options.approvalPrompt ? { prompt: options.approvalPrompt } : {}),
  });
}

/** The caller's extensions, plus the SLURM job tools when the SAM asks for `jobs: slurm`. */
async function extensionsFor(
  { options, site, sitePolicyFile, pollMs }: RunInputs,
  sam: SamDocument,
  runId: string,
  resume: boolean,
  approvals: ApprovalGate | undefined,
): Promise<RunExtension[]> {
  const own = [...(options.extensions ?? [])];
  // A host list, or network: true (Apptainer goes through the run's proxy): every connection the
  // proxy sees or the capture catches goes on the history.
  if (sam.metadata.network || sam.metadata.networkHosts?.length) {
    const { networkRecordsExtension } = await import("./session/network-records.ts");
    own.push(networkRecordsExtension(runId));
  }
  // `network` in approval: a host not on the list can be asked for, and approved, at run time.
  if (sam.metadata.networkHosts?.length && approvals?.requires("network")) {
    const { hostApprovalExtension } = await import("./gates/approve-hosts.ts");
    own.push(
      hostApprovalExtension({
        home: options.home,
        runId,
        task: sam.metadata.name,
        listed: sam.metadata.networkHosts,
        site,
        gate: approvals,
        ...(pollMs ? { pollMs } : {}),
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
  const jobs = jobsExtension({
    home: options.home,
    runId,
    sam,
    sitePolicyFile,
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
    // A paused run has not ended: its extensions are told so (as for a run that stopped).
    outcome = result.paused ? undefined : result.outcome;
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
  { options, site, sitePolicyFile }: RunInputs,
  onStatus: RunTaskOptions["onStatus"],
  backend: RunDeps["backend"],
  model: string,
  sam: SamDocument,
  extensions: readonly RunExtension[],
): Promise<RunDeps> {
  const { resolveSpec } = await import("../policy/resolve.ts");
  const { createModel } = await import("../llm/create-model.ts");
  // The live display's last status, so the gateway's notice (a long retry-after it waits for) is
  // shown with it, and cleared by the next status the loop sends.
  let last: RunStatus | undefined;
  const { skills, helpers } = await skillsFor(options.home, sam, site.prescanAddsSkills);
  return {
    backend,
    // `--site-policy` or SCIFI_SITE_POLICY: recorded, so `scifi ctl` reads the same file.
    ...(sitePolicyFile !== homePaths(options.home).sitePolicy ? { sitePolicyFile } : {}),
    // Every grant resolution adds the offered domain packs' helper folders, read-only (skills.ts).
    resolveSpec: async (sam, runId, grant) =>
      withHelperMounts(await resolveSpec(sam, site, { home: options.home, runId, ...grant }), helpers),
    openModel: async (audit: AuditTape, run) => {
      const opened = await createModel(model, audit, {
        purse: run.purse,
        home: options.home,
        // The run's clock: a walltime changed mid-run (scifi ctl) moves it.
        deadline: run.deadline,
        ...(onStatus ? { onNotice: (notice) => last && onStatus({ ...last, notice }) } : {}),
        ...(options.retry ? { retry: options.retry } : {}),
      });
      return abortableBy(opened, run.signal);
    },
    skills,
    memoryTokens: site.memoryTokens,
    critique: critiqueModeOf(sam, site),
    extensions,
    ...(options.signal ? { signal: options.signal } : {}),
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
  sam: SamDocument,
  prescanAdds: boolean,
): Promise<{ skills: RunDeps["skills"]; helpers: HelperFolder[] }> {
  const { loadSkills, skillIndex, renderSkillIndex, skillText } = await import("../skills/index.ts");
  const { grantsOf, skillDirs } = await import("../skills/library.ts");
  const grants = grantsOf(sam.metadata);
  const { skills } = loadSkills(skillDirs(homePaths(home).skills));
  const all = skillIndex(skills, grants);
  const requested = sam.metadata.skills ?? [];
  const granted = requested.filter((name) => all.some((entry) => entry.name === name));
  const index = prescanAdds ? all : all.filter((entry) => granted.includes(entry.name));
  const offered = skills.filter((s) => index.some((entry) => entry.name === s.name));
  return {
    skills: {
      index: index.length > 0 ? renderSkillIndex(index) : "(no skills available for this task)",
      names: index.map((entry) => entry.name),
      granted,
      prescanAdds,
      text: (name) => skillText(skills, name),
      critiqueContext: (name) => skills.find((s) => s.name === name)?.critiqueContext,
    },
    // Mounted for every skill the run offers (the grant is fixed at start); the work agent is told of
    // the registry of the skills it is given.
    helpers: offered.flatMap((s) => (s.helpers ? [{ name: s.name, dir: s.helpers.dir }] : [])),
  };
}

/** The run's critique mode: the SAM's and the site's, the stricter (runner/critique/mode.ts). */
function critiqueModeOf(sam: SamDocument, site: SitePolicy): CritiqueMode {
  return effectiveCritiqueMode({
    ...(sam.metadata.critique ? { sam: sam.metadata.critique } : {}),
    ...(site.critique ? { site: site.critique } : {}),
    approval: [...(sam.metadata.approval ?? []), ...(site.approvalRequired ?? [])],
  });
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

/**
 * The model with the run's stop signal on every call that brings none of its own (the pre-scan,
 * final review, tracer and critique calls), so a cancel or the deadline ends an in-flight call at
 * once instead of after it returns. Methods are bound to the model itself (its private fields do not see a proxy).
 */
function abortableBy<M extends object & { complete: Model["complete"] }>(model: M, signal: AbortSignal): M {
  return new Proxy(model, {
    get(target, property) {
      if (property === "complete")
        return (request: ModelRequest, own?: AbortSignal) => target.complete(request, own ?? signal);
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
