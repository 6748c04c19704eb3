// Where scifi keeps its state. One "home" folder (env SCIFI_HOME, default the current directory)
// holds tasks/, memory/, skills/, runs/ and the config files. Run records never live in the task
// folder: the container can write there, and records must be out of the agent's reach.
import { join, resolve } from "node:path";

export function scifiHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.SCIFI_HOME ?? process.cwd());
}

/**
 * The daemon's lock in its inbox (a dotfile, so never taken as a task). It also marks the folder as
 * a live inbox for commands of other homes (`scifi make-task -o`), which know no daemon lock but
 * their own.
 */
export const INBOX_LOCK = ".scifi-daemon.lock";

export const homePaths = (home: string) => ({
  tasks: join(home, "tasks"),
  runs: join(home, "runs"),
  memory: join(home, "memory"),
  globalMemory: join(home, "memory", "global.md"),
  /** Global suggestions of final reviews: they enter global.md only by `scifi memory accept`. */
  globalProposed: join(home, "memory", "global.proposed.md"),
  groupMemory: (group: string) => join(home, "memory", "groups", `${group}.md`),
  skills: join(home, "skills"),
  /** `scifi eval`'s evals/<id>/ (trials, task copies, summaries). */
  evals: join(home, "evals"),
  /** The daemon's records, logs and single-file tasks' work folders (runner/daemon/records.ts). */
  daemon: join(home, "daemon"),
  /** `scifi check-task`'s cache, audit homes and the task copies its audits run on. */
  checkTask: join(home, "check-task"),
  /** `scifi evolve`'s proposals and decisions. */
  evolve: join(home, "evolve"),
  /** The runner's own bookkeeping (locks, asset hashes). */
  internal: join(home, ".scifi"),
  /** Per task folder, the SAM and asset hashes its last run captured (runner/run/checks/last-assets.ts). */
  lastAssets: join(home, ".scifi", "last-assets"),
  /** Per task folder, the lock of the one run that uses it (runner/task-folder-lock.ts). */
  taskLocks: join(home, ".scifi", "task-locks"),
  sitePolicy: join(home, "site-policy.yaml"),
  modelsConfig: join(home, "models.yaml"),
});

/** Files of one run folder `runs/<runId>/`. */
export const runFiles = (runDir: string) => ({
  /** Byte copy of the SAM as it was at start (and sub-SAM files under sam/). */
  sam: join(runDir, "sam.md"),
  /** The parsed SAM tree (deterministic JSON). */
  samJson: join(runDir, "sam.json"),
  /** The resolved sandbox spec actually granted. */
  spec: join(runDir, "spec.json"),
  /** Checkpoint written after every phase; `scifi run --resume` reads it. */
  state: join(runDir, "state.json"),
  /** History tape: one JSON event a line. */
  history: join(runDir, "history.jsonl"),
  /** Audit tape: one JSON record per LLM call (and per injected memory/skill), hash-chained. */
  audit: join(runDir, "audit.jsonl"),
  /** Task memory: append-only Markdown entries. */
  memory: join(runDir, "memory.md"),
  /** The runner's copies of SAM files and check assets, put back before every check phase. */
  pristine: join(runDir, "pristine"),
  /** Held by the one process driving the run (runner/run/task-folder/run-lock.ts). */
  lock: join(runDir, "run.lock"),
  /** A person's decisions on the run (`scifi ctl`): one file each, written atomically (runner/run/session/control.ts). */
  control: join(runDir, "control"),
});

export function runDir(home: string, runId: string): string {
  return join(homePaths(home).runs, runId);
}
