// `scifi check-task`: audits a task's checks before they count (docs/check-task.md). Each audit is
// a real run (runner/run/setup.ts runTask, the wiring of `scifi run`: the same sandboxes, check
// stages, pristine copies and records) on a fresh copy of the task folder, with a scripted lazy
// agent (agents.ts) and a credulous review, so only the runner's checks decide:
//   untouched  the claim agent on the untouched folder: the checks must fail;
//   solution   the work agent writes the solution's files over the copy, then claims: the checks must pass;
//   nothing, empty, constants  the other lazy agents: each must fail.
// The result is cached under <home>/check-task/ by the content hash of the task folder (and of the
// solution), the backend and this audit's version: a second audit of the same task costs a read.
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, join, resolve } from "node:path";
import { writeJsonAtomic } from "../atomic-write.ts";
import { readHistory } from "../memory/history.ts";
import { homePaths } from "../paths.ts";
import type { RunResult } from "../run/session/deps.ts";
import type { SamDocument } from "../sam/types.ts";
import { lockTaskFolder, TaskFolderBusy } from "../task-folder-lock.ts";
import { AGENT_WORDS, type LazyAgent, lazyScript, nodes, solutionCalls } from "./agents.ts";
import { hashFolder } from "./content-hash.ts";

/** Bumped when what an audit runs changes: older cached results are not reused. */
export const AUDIT_VERSION = 1;

export type AuditName = "untouched" | "solution" | Exclude<LazyAgent, "claim">;

export interface AuditOptions {
  home: string;
  /** A folder whose files are laid over a copy of the task folder: its checks must then pass. */
  solution?: string;
  backend?: string;
  /** The SAM file in the task folder (a variant's `task.nl.md`); default `task.md`. */
  sam?: string;
  /** Run again even when a cached result exists. */
  refresh?: boolean;
  /** Told each audit as it starts (the terminal's progress). */
  onAudit?: (name: AuditName) => void;
}

/** One check of an audit's run, as the history recorded it. */
export interface AuditCheck {
  id: string;
  node: string;
  passed: boolean;
  exitCode: number;
}

export interface AuditRun {
  audit: AuditName;
  /** What the audit ran (the lazy agent, the solution). */
  what: string;
  /** The checks must pass (solution) or fail (every other audit). */
  expect: "pass" | "fail";
  ok: boolean;
  status: string;
  reason: string;
  runId: string;
  runDir: string;
  checks: AuditCheck[];
}

/** One thing wrong with the task's checks: which audit, which check, what happened. */
export interface Finding {
  audit: AuditName;
  /** The checks it is about (their ids), empty when no check judged at all. */
  checks: string[];
  text: string;
  /** The run behind it (its folder: `scifi report` of it shows every check's output). */
  run: string;
}

export interface AuditReport {
  version: typeof AUDIT_VERSION;
  task: string;
  taskDir: string;
  sam: string;
  /** SHA-256 over every entry of the task folder (and the solution's), the backend and the version. */
  contentHash: string;
  backend: string;
  solution?: string;
  /** Every check of the SAM (ids); none: the review alone would judge. */
  checks: string[];
  sound: boolean;
  audits: AuditRun[];
  findings: Finding[];
  auditedAt: string;
  /** True when this report came from the cache (set on read, not stored). */
  cached?: boolean;
}

/** Bad input: no task folder, no SAM, an invalid SAM, a solution that is not a folder (exit 2). */
export class AuditInputError extends Error {
  override name = "AuditInputError";
  /** The gate's diagnostics, one a line as `scifi validate` prints them (empty: none). */
  readonly diagnostics: string;
  constructor(message: string, diagnostics = "") {
    super(message);
    this.diagnostics = diagnostics;
  }
}

/** The cache file of a content hash. */
export function auditCacheFile(home: string, hash: string): string {
  return join(home, "check-task", `${hash}.json`);
}

/** The content hash an audit of this task (with this solution and backend) is cached by. */
export async function auditHash(
  taskDir: string,
  o: { solution?: string; backend: string; sam: string },
): Promise<string> {
  const hash = createHash("sha256");
  hash.update(`scifi check-task ${AUDIT_VERSION}\n${o.backend}\n${o.sam}\n`);
  await hashFolder(taskDir, hash);
  if (o.solution) {
    hash.update("solution\n");
    await hashFolder(o.solution, hash);
  }
  return hash.digest("hex");
}

/** Audits a task's checks (cached by content); throws AuditInputError on bad input. */
export async function auditTask(taskDirIn: string, options: AuditOptions): Promise<AuditReport> {
  const taskDir = resolve(taskDirIn);
  const samName = options.sam ?? "task.md";
  if (!existsSync(taskDir) || !statSync(taskDir).isDirectory())
    throw new AuditInputError(`task folder ${taskDir} does not exist: give the folder that holds task.md`);
  const samFile = join(taskDir, samName);
  if (!existsSync(samFile))
    throw new AuditInputError(
      `${samFile} does not exist: a task folder holds task.md (or give the SAM file itself, e.g. task.nl.md)`,
    );
  const solution = options.solution ? resolve(options.solution) : undefined;
  if (solution && (!existsSync(solution) || !statSync(solution).isDirectory()))
    throw new AuditInputError(
      `solution ${solution} is not a folder: give the folder whose files solve the task`,
    );
  const { loadSam } = await import("../run/setup.ts");
  // The one gate (runner/sam/gate.ts, skill names against the home's library): an invalid SAM is bad input.
  let sam: SamDocument;
  try {
    sam = await loadSam(samFile, options.home);
  } catch (error) {
    const { InvalidInput } = await import("../run/session/errors.ts");
    const { formatDiagnostic } = await import("../sam/diagnostics.ts");
    if (!(error instanceof InvalidInput)) throw error;
    throw new AuditInputError(error.message, error.diagnostics.map(formatDiagnostic).join("\n"));
  }
  if (solution) {
    try {
      solutionCalls(solution);
    } catch (error) {
      throw new AuditInputError(error instanceof Error ? error.message : String(error));
    }
  }
  // A folder a live run works in holds its agent's half-done work: judged as "untouched" it would give
  // (and cache) a false finding. Refused naming the run (a38c), and held for the whole audit, as a
  // run holds it: every audit copies the folder afresh, so a run started meanwhile would be judged
  // too (a38d).
  let release: () => void;
  try {
    release = lockTaskFolder(options.home, taskDir, `check-task-${Date.now()}-${process.pid}`);
  } catch (error) {
    if (!(error instanceof TaskFolderBusy)) throw error;
    throw new AuditInputError(error.message);
  }
  try {
    return await auditHeld(taskDir, samName, samFile, sam, solution, options);
  } finally {
    release();
  }
}

/** The audit itself, with the task folder's lock held (auditTask). */
async function auditHeld(
  taskDir: string,
  samName: string,
  samFile: string,
  sam: SamDocument,
  solution: string | undefined,
  options: AuditOptions,
): Promise<AuditReport> {
  const backend = options.backend ?? "docker";
  const contentHash = await auditHash(taskDir, { ...(solution ? { solution } : {}), backend, sam: samName });
  const cacheFile = auditCacheFile(options.home, contentHash);
  if (!options.refresh && existsSync(cacheFile)) {
    try {
      const report = JSON.parse(readFileSync(cacheFile, "utf8")) as AuditReport;
      if (report.version === AUDIT_VERSION && report.contentHash === contentHash)
        // The same content elsewhere (a copy of the folder) is the same audit, shown for this folder.
        return { ...report, task: basename(taskDir), taskDir, sam: samFile, cached: true };
    } catch {
      // A torn or foreign cache file: audit again and write it anew.
    }
  }
  const work = join(options.home, "check-task", "work", contentHash.slice(0, 16));
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const plan: { audit: AuditName; agent: LazyAgent | "solution"; expect: "pass" | "fail" }[] = [
    { audit: "untouched", agent: "claim", expect: "fail" },
    ...(solution
      ? [{ audit: "solution" as const, agent: "solution" as const, expect: "pass" as const }]
      : []),
    { audit: "nothing", agent: "nothing", expect: "fail" },
    { audit: "empty", agent: "empty", expect: "fail" },
    { audit: "constants", agent: "constants", expect: "fail" },
  ];
  const audits: AuditRun[] = [];
  try {
    for (const step of plan) {
      options.onAudit?.(step.audit);
      audits.push(
        await runAudit(step, { taskDir, samName, sam, solution, work, backend, home: options.home }),
      );
    }
  } finally {
    // The copies the runs worked in; the runs' own records stay under runs/.
    for (const step of plan) rmSync(join(work, step.audit, "task"), { recursive: true, force: true });
  }
  const checks = nodes(sam.root).flatMap((n) => n.items.flatMap((i) => i.checks.map((c) => c.id)));
  const findings = audits.flatMap((run) => findingsOf(run, checks));
  const report: AuditReport = {
    version: AUDIT_VERSION,
    task: basename(taskDir),
    taskDir,
    sam: samFile,
    contentHash,
    backend,
    ...(solution ? { solution } : {}),
    checks,
    sound: findings.length === 0,
    audits,
    findings,
    auditedAt: new Date().toISOString(),
  };
  mkdirSync(join(options.home, "check-task"), { recursive: true });
  // An audit that could not run is not a result to keep: the next audit tries again.
  if (!audits.some((a) => a.status === "error")) writeJsonAtomic(cacheFile, report);
  return report;
}

/**
 * Where the audits' runs live: a home of their own under the user's (`<home>/check-task/home`),
 * so the lazy agents' runs are apart from the user's runs, task-group memory and global memory,
 * with the user's site policy and skill library (a link to it) for the same grants and gate.
 */
export function auditHome(home: string): string {
  const own = join(home, "check-task", "home");
  mkdirSync(own, { recursive: true });
  const skills = homePaths(home).skills;
  const link = homePaths(own).skills;
  if (existsSync(skills) && !existsSync(link)) symlinkSync(skills, link);
  return own;
}

interface AuditContext {
  taskDir: string;
  samName: string;
  sam: SamDocument;
  solution: string | undefined;
  work: string;
  backend: string;
  home: string;
}

/** One audit: a fresh copy, the agent's script, a real run; its checks read from its history. */
async function runAudit(
  step: { audit: AuditName; agent: LazyAgent | "solution"; expect: "pass" | "fail" },
  c: AuditContext,
): Promise<AuditRun> {
  const dir = join(c.work, step.audit);
  const copy = join(dir, "task");
  mkdirSync(dir, { recursive: true });
  // The copy keeps links as links and modes as they are: the run sees the folder as it is.
  cpSync(c.taskDir, copy, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  const samCopy = join(copy, c.samName);
  if (c.samName !== "task.md") cpSync(samCopy, join(copy, "task.md"));
  const script = join(dir, `${step.audit}.yaml`);
  const lazy = lazyScript(step.agent, c.sam, copy, step.agent === "solution" ? c.solution : undefined);
  writeFileSync(script, lazy.text);
  const { runTask } = await import("../run/setup.ts");
  const base = {
    audit: step.audit,
    what: AGENT_WORDS[step.agent],
    expect: step.expect,
  };
  try {
    const { sitePolicyPath } = await import("../policy/site.ts");
    const policy = sitePolicyPath(c.home);
    const result = await runTask({
      home: auditHome(c.home),
      ...(existsSync(policy) ? { sitePolicy: policy } : {}),
      task: join(copy, "task.md"),
      backend: c.backend,
      model: `scripted:${script}`,
      // The agent's first pass takes exactly its scripted steps (the nothing agent's one text
      // step ends its pass at the limit, with no claim); one iteration per node of the SAM.
      limits: {
        stepsPerPass: lazy.firstPassSteps,
        toolCallsPerPass: Math.max(lazy.firstPassCalls, 1),
        iterations: nodes(c.sam.root).length,
      },
      // A request the SAM makes a person approve (`approval: [finish]`, a deletion) is approved
      // here: the audit runs on its own copy, and the worst case for the checks is a yes.
      approvalPrompt: async () => ({
        approved: true,
        note: "scifi check-task: approved for the audit's own run on a copy of the task folder",
      }),
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      // Nobody resumes an audit's run: it refuses a pause (scifi ctl, a decision file) on its history.
      startedBy: { tool: "check-task", audit: step.audit },
    });
    return auditRunOf(base, result);
  } catch (error) {
    // A run that could not run (the sandbox could not start): the audit did not happen.
    return {
      ...base,
      ok: false,
      status: "error",
      reason: error instanceof Error ? error.message : String(error),
      runId: "",
      runDir: "",
      checks: [],
    };
  }
}

/**
 * An audit's verdict from its run's result. A run that paused has no outcome (its status is a
 * stand-in): its checks may never have run, so the audit did not happen (status error: a finding,
 * nothing cached), never "the checks failed" (a41d-ctl-check-task).
 */
export function auditRunOf(
  base: Pick<AuditRun, "audit" | "what" | "expect">,
  result: Pick<RunResult, "runId" | "dir" | "outcome" | "paused">,
): AuditRun {
  const run = { ...base, runId: result.runId, runDir: result.dir, checks: readChecks(result.dir) };
  if (result.paused)
    return {
      ...run,
      ok: false,
      status: "error",
      reason: `the audit's run paused after phase ${result.paused.phase} (${result.paused.reason}) before it had a verdict`,
    };
  const passed = result.outcome.status === "passed";
  return {
    ...run,
    ok: base.expect === "pass" ? passed : !passed,
    status: result.outcome.status,
    reason: result.outcome.reason ?? "",
  };
}

/** The checks the run's history recorded, in order. */
function readChecks(runDir: string): AuditCheck[] {
  const file = join(runDir, "history.jsonl");
  if (!existsSync(file)) return [];
  return readHistory(file).flatMap((e) =>
    e.type === "check" ? [{ id: e.check, node: e.node, passed: e.passed, exitCode: e.exitCode }] : [],
  );
}

/** What an audit that did not come out as it must says. */
export function findingsOf(run: AuditRun, checks: readonly string[]): Finding[] {
  if (run.ok) return [];
  if (
    run.status === "error" ||
    (run.expect === "pass" && run.status !== "failed" && run.status !== "passed")
  ) {
    return [
      {
        audit: run.audit,
        checks: [],
        run: run.runDir,
        text: `${run.audit}: the audit's run did not end with a verdict (${run.status}: ${run.reason}); run it again, or see ${run.runDir || "the error above"}`,
      },
    ];
  }
  if (run.expect === "pass") {
    const failed = run.checks.filter((c) => !c.passed);
    return [
      {
        audit: run.audit,
        checks: failed.map((c) => c.id),
        run: run.runDir,
        text:
          failed.length > 0
            ? `solution: the solution fails check${failed.length === 1 ? "" : "s"} ${failed.map((c) => `${c.id} (exit ${c.exitCode})`).join(", ")}: no agent can pass this task as its checks stand`
            : `solution: the solution's run ended ${run.status}: ${run.reason}`,
      },
    ];
  }
  const passed = [...new Set(run.checks.filter((c) => c.passed).map((c) => c.id))];
  const judged =
    checks.length === 0
      ? "the SAM has no check: the review alone judges it, and a review can be talked into a pass"
      : `check${passed.length === 1 ? "" : "s"} ${passed.join(", ")} passed`;
  const lead: Record<AuditName, string> = {
    untouched:
      "untouched: the checks pass on the untouched task folder, so an agent that only claims (report_done) passes",
    nothing: "nothing: an agent that does nothing passes",
    empty: "empty: an agent that empties every file it may passes",
    constants: "constants: an agent that writes constants into the files the Expectation names passes",
    solution: "solution",
  };
  return [{ audit: run.audit, checks: passed, text: `${lead[run.audit]}: ${judged}`, run: run.runDir }];
}
