// One run at a time per task folder. Two runs on one folder would lend, restore and judge the same
// files at once (a root-run scifi lends the folder to the sandbox user: the second run would take
// that user for the owner and give the folder back to it). A run (`scifi run`, a resume, a daemon
// worker, the run a SLURM job starts) takes two pid locks (pid-lock.ts: a dead holder's lock is
// taken over, a live one refused by name) before it writes anything:
// - the host's: keyed by the folder's device and inode, in per-user runtime folders outside every
//   home at fixed places keyed by uid (runtimeDirs), so two SCIFI_HOMEs, two spellings of one
//   folder (a link, a bind mount), or two environments (a login shell with XDG_RUNTIME_DIR and a
//   cron job without it, two TMPDIRs) meet the same lock;
// - the home's: keyed by the folder's real path, in `<home>/.scifi/task-locks`, which a shared home
//   carries to every node of a cluster (an owner on another host counts as live).
// A folder inside, or around, a folder a live run holds is refused too (refuseNested): a run of a
// project and a run of one of its sub-folders (a sub-SAM alone) would work on the sub-folder at once.
// Neither is reachable by the agent: no sandbox mounts the runtime folder or the home's `.scifi`.
// Runs of one folder by two different users are not coordinated (each has its own runtime
// folder): a task folder belongs to one user.
import { lstatSync, mkdirSync, readdirSync, realpathSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
import { homePaths } from "./paths.ts";
import { acquirePidLock, LockHeld, ownerAlive, type PidLockOwner, readPidLock } from "./pid-lock.ts";
import { sha256 } from "./sha256.ts";

export interface TaskFolderOwner extends PidLockOwner {
  runId: string;
  taskDir: string;
}

/** A second run of a task folder while one uses it: refused, naming the run that holds it. */
export class TaskFolderBusy extends LockHeld<TaskFolderOwner> {
  override name = "TaskFolderBusy";
  constructor(file: string, owner: TaskFolderOwner, nested?: { taskDir: string; inside: boolean }) {
    const where = nested
      ? `task folder ${nested.taskDir} is ${nested.inside ? "inside" : "around"} task folder ${owner.taskDir}, which`
      : `task folder ${owner.taskDir}`;
    super(
      `${where} is in use by run ${owner.runId} (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}); one run at a time per task folder (two would lend, restore and judge the same files at once${nested ? "; a run of a folder holds all its sub-folders" : ""}): wait for it to end, or run a copy of the folder. If that process is gone (its host crashed), delete ${file}.`,
      owner,
    );
  }
}

/**
 * The per-user folder of host-wide records (locks, lends): `$SCIFI_RUNTIME_DIR` when set (then in
 * every environment scifi runs from, as SCIFI_HOME), else `/tmp/scifi-<uid>`: a fixed place, never
 * from XDG_RUNTIME_DIR or TMPDIR, which differ between a login shell, a cron job, `su` and a
 * service. Made 0700; one that is a link, not a folder, not this user's or open to others is refused
 * (in a shared /tmp another user could have made it to delete or plant locks).
 */
export function runtimeDir(env: NodeJS.ProcessEnv = process.env): string {
  const uid = process.getuid?.() ?? 0;
  return ownedDir(env.SCIFI_RUNTIME_DIR || join("/tmp", `scifi-${uid}`), uid);
}

/**
 * Every folder the host lock is taken in: runtimeDir, and without SCIFI_RUNTIME_DIR also
 * `/run/user/<uid>/scifi` where `/run/user/<uid>` is this user's folder (systemd's runtime folder,
 * set up whether or not XDG_RUNTIME_DIR names it): a service with a private /tmp (PrivateTmp) still
 * meets a shell's run there. Where it does not exist (a cluster's compute node, a container) /tmp
 * alone holds it; /tmp is per node, so across nodes only the home's lock coordinates.
 */
export function runtimeDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const uid = process.getuid?.() ?? 0;
  const dirs = [runtimeDir(env)];
  if (env.SCIFI_RUNTIME_DIR) return dirs;
  const systemd = join("/run/user", String(uid));
  let stat: ReturnType<typeof lstatSync> | undefined;
  try {
    stat = lstatSync(systemd);
  } catch {
    stat = undefined;
  }
  if (stat?.isDirectory() && stat.uid === uid) dirs.push(ownedDir(join(systemd, "scifi"), uid));
  return dirs;
}

/** `dir`, made 0700 if missing, or an error when it is not a folder only `uid` can use. */
function ownedDir(dir: string, uid: number): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || stat.uid !== uid || (stat.mode & 0o077) !== 0)
    throw new Error(
      `${dir} (scifi's runtime folder for locks) must be a folder of uid ${uid} that only it can use (mode 0700, not a link); it is ${stat.isSymbolicLink() ? "a link" : stat.isDirectory() ? `uid ${stat.uid}'s, mode ${(stat.mode & 0o777).toString(8)}` : "not a folder"}: remove it, or set SCIFI_RUNTIME_DIR to a folder of your own (in every environment you run scifi from)`,
    );
  return dir;
}

/** The folders the task-folder locks live in: each runtime folder's, then the home's. */
function lockDirs(home: string): string[] {
  const dirs = runtimeDirs().map((runtime) => join(runtime, "task-locks"));
  dirs.push(homePaths(home).taskLocks);
  for (const dir of dirs) mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dirs;
}

/** The lock files of a task folder: the host's (device and inode, in each runtime folder), then the home's (path). */
function lockFiles(home: string, taskDir: string): string[] {
  const files: string[] = [];
  let stat: ReturnType<typeof statSync> | undefined;
  try {
    stat = statSync(taskDir);
  } catch {
    stat = undefined; // a folder that is not there yet: only the home's lock
  }
  if (stat)
    for (const runtime of runtimeDirs()) {
      const dir = join(runtime, "task-locks");
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      files.push(join(dir, `${stat.dev}-${stat.ino}.lock`));
    }
  const dir = homePaths(home).taskLocks;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  files.push(join(dir, `${sha256(taskDir).slice(0, 32)}.lock`));
  return files;
}

/**
 * One run at a time per task folder: takes the folder's locks or throws TaskFolderBusy naming the
 * run that holds it (nothing taken then); returns the release function.
 */
export function lockTaskFolder(home: string, taskDir: string, runId: string): () => void {
  const releases: (() => void)[] = [];
  const releaseAll = () => {
    for (const release of releases.reverse()) release();
  };
  try {
    const files = lockFiles(home, taskDir);
    for (const file of files)
      releases.push(
        acquirePidLock<TaskFolderOwner>(file, { runId, taskDir }, (owner) => new TaskFolderBusy(file, owner))
          .release,
      );
    // After taking ours: two runs nesting that start at once each see the other (both refused, never both run).
    refuseNested(home, taskDir, new Set(files));
  } catch (error) {
    releaseAll();
    throw error;
  }
  return releaseAll;
}

/**
 * Throws TaskFolderBusy when a live run holds the task folder; takes nothing. For what must not
 * start on a folder in use (an eval copying it for its trials, a SLURM job submitted for it).
 */
export function refuseBusyTaskFolder(home: string, taskDir: string): void {
  for (const file of lockFiles(home, taskDir)) {
    const owner = readPidLock<TaskFolderOwner>(file);
    // As acquirePidLock: an owner on another host cannot be checked from here, so it counts as live.
    if (owner && (owner.host !== hostname() || ownerAlive(owner))) throw new TaskFolderBusy(file, owner);
  }
  refuseNested(home, taskDir, new Set());
}

/** `dir` with its links resolved, or as given (made absolute) when it is not there. */
function real(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}

/** A folder's device-inode key (as the host lock names it), or undefined when it is not there. */
function key(dir: string): string | undefined {
  try {
    const stat = statSync(dir);
    return `${stat.dev}-${stat.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * The keys of every folder above `dir` (its links resolved): a folder reached through a link or a
 * bind mount still meets its ancestors' keys.
 */
function ancestorKeys(dir: string): string[] {
  const keys: string[] = [];
  for (let at = real(dir); dirname(at) !== at; ) {
    at = dirname(at);
    const k = key(at);
    if (k !== undefined) keys.push(k);
  }
  return keys;
}

/**
 * Throws TaskFolderBusy when a live lock (other than `own`) holds a folder strictly inside or around
 * `taskDir`: compared by real path and by device and inode, so a link or bind mount does not hide it.
 */
function refuseNested(home: string, taskDir: string, own: Set<string>): void {
  const mine = real(taskDir);
  const myKey = key(mine);
  const myAncestors = ancestorKeys(taskDir);
  for (const dir of lockDirs(home)) {
    for (const name of readdirSync(dir)) {
      if (!name.endsWith(".lock")) continue;
      const file = join(dir, name);
      if (own.has(file)) continue;
      const owner = readPidLock<TaskFolderOwner>(file);
      if (!owner || typeof owner.taskDir !== "string") continue;
      if (owner.host === hostname() && !ownerAlive(owner)) continue;
      const theirs = real(owner.taskDir);
      if (theirs === mine) continue; // the same folder: its own lock decides
      const theirKey = key(theirs);
      if (theirKey !== undefined && theirKey === myKey) continue;
      const inside =
        mine.startsWith(`${theirs}/`) || (theirKey !== undefined && myAncestors.includes(theirKey));
      const around =
        theirs.startsWith(`${mine}/`) || (myKey !== undefined && ancestorKeys(theirs).includes(myKey));
      if (inside || around) throw new TaskFolderBusy(file, owner, { taskDir, inside });
    }
  }
}
