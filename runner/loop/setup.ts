// Wiring for one `scifi run`: parse the SAM, apply the site policy, pick the backend, open the
// gateway on the run's audit tape, load the skills, then start or resume the loop. The CLI, the
// tests and the benchmark all go through here, so they exercise the same path.
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AuditTape } from "../audit/tape.ts";
import { homePaths } from "../paths.ts";
import type { Diagnostic } from "../sam/types.ts";
import type { Tool } from "../tools/tool.ts";
import type { LimitConfig } from "./limits.ts";
import { newRunId } from "./records.ts";
import { type RunDeps, type RunResult, resumeRun, startRun } from "./run.ts";
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
  runId?: string;
  /** Shorter retry settings for tests. */
  retry?: { maxRetries?: number; baseDelayMs?: number; timeoutMs?: number };
  extraWorkTools?: readonly Tool[];
  /** See RunDeps.onHistory. */
  onHistory?: RunDeps["onHistory"];
  onStatus?: (status: RunStatus) => void;
  /** Called once the run folder exists (before the loop starts). */
  onRunId?: (runId: string, dir: string) => void;
}

/** Bad input the user can fix: exit 2. */
export class InvalidInput extends Error {
  override name = "InvalidInput";
  readonly diagnostics: Diagnostic[];
  constructor(message: string, diagnostics: Diagnostic[] = []) {
    super(message);
    this.diagnostics = diagnostics;
  }
}

export async function runTask(options: RunTaskOptions): Promise<RunResult> {
  const { getBackend } = await import("../sandbox/registry.ts");
  if (options.resume) {
    const { readState } = await import("./state.ts");
    const { openRunFolder } = await import("./records.ts");
    const folder = openRunFolder(options.home, options.resume);
    if (!existsSync(folder.files.state)) {
      throw new InvalidInput(
        `no run '${options.resume}' under ${homePaths(options.home).runs} (no state.json there)`,
      );
    }
    const state = readState(folder.files.state);
    const backend = await getBackend(options.backend ?? state.backend);
    // A run still driven by a live process is refused before anything is touched, its sandbox too
    // (resumeRun takes the lock itself; this only checks it earlier).
    const { refuseLiveRun } = await import("./run-lock.ts");
    refuseLiveRun(folder);
    // The dead process's sandbox is still there (SIGKILL runs no cleanup): remove this home's
    // orphans whose runner is gone before a fresh sandbox takes over the task folder.
    await backend.prune({ home: options.home }).catch(() => []);
    const model = options.model ?? state.model ?? defaultModel(options.home);
    options.onRunId?.(state.runId, folder.dir);
    return resumeRun(options.home, options.resume, await deps(options, backend, model, state.samFile));
  }
  if (!options.task) throw new InvalidInput("give a SAM task file (or its folder), or --resume RUN");
  const file = samFileOf(options.task);
  const { parseSam } = await import("../sam/parse.ts");
  const parsed = await parseSam(file);
  if (!parsed.ok) {
    throw new InvalidInput(
      `${file} is not a valid SAM (run 'scifi validate ${options.task}')`,
      parsed.diagnostics,
    );
  }
  const backend = await getBackend(options.backend ?? "docker");
  const model = options.model ?? defaultModel(options.home);
  const runId = options.runId ?? newRunId(parsed.sam.metadata.name);
  const runDeps = await deps(options, backend, model, file);
  return startRun(
    { home: options.home, sam: parsed.sam, limits: options.limits, runId, model },
    {
      ...runDeps,
      onCreated: (dir) => options.onRunId?.(runId, dir),
    },
  );
}

async function deps(
  options: RunTaskOptions,
  backend: RunDeps["backend"],
  model: string,
  samFile: string,
): Promise<RunDeps> {
  const { loadSitePolicy, sitePolicyPath } = await import("../policy/site.ts");
  const { resolveSpec } = await import("../policy/resolve.ts");
  const { createModel } = await import("../llm/create-model.ts");
  const site = loadSitePolicy(
    sitePolicyPath(options.home, options.sitePolicy),
    options.sitePolicy !== undefined,
  );
  return {
    backend,
    resolveSpec: (sam, runId, grant) =>
      resolveSpec(sam, site.policy, { home: options.home, runId, ...grant }),
    openModel: (audit: AuditTape, budget) =>
      createModel(model, audit, { budget, ...(options.retry ? { retry: options.retry } : {}) }),
    skills: await skillsFor(options.home, samFile),
    extraWorkTools: options.extraWorkTools,
    onHistory: options.onHistory,
    onStatus: options.onStatus,
  };
}

async function skillsFor(home: string, samFile: string): Promise<RunDeps["skills"]> {
  const { loadSkills, skillIndex, renderSkillIndex, skillText } = await import("../skills/index.ts");
  const { grantsOf, skillDirs } = await import("../skills/library.ts");
  const { parseSamSync } = await import("../sam/parse.ts");
  const parsed = existsSync(samFile) ? parseSamSync(samFile) : undefined;
  const grants = parsed?.ok ? grantsOf(parsed.sam.metadata) : new Set<never>();
  const { skills } = loadSkills(skillDirs(homePaths(home).skills));
  const index = skillIndex(skills, grants);
  return {
    index: renderSkillIndex(index),
    names: index.map((entry) => entry.name),
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
