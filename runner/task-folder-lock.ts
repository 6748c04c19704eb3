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
// Neither is reachable by the agent: no sandbox mounts the runtime folder or the home's `.scifi`.
// Runs of one folder by two different users are not coordinated (each has its own runtime
// folder): a task folder belongs to one user.
import { lstatSync, mkdirSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
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
  constructor(file: string, owner: TaskFolderOwner) {
    super(
      `task folder ${owner.taskDir} is in use by run ${owner.runId} (pid ${owner.pid} on ${owner.host}, since ${owner.startedAt}); one run at a time per task folder (two would lend, restore and judge the same files at once): wait for it to end, or run a copy of the folder. If that process is gone (its host crashed), delete ${file}.`,
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
    for (const file of lockFiles(home, taskDir))
      releases.push(
        acquirePidLock<TaskFolderOwner>(file, { runId, taskDir }, (owner) => new TaskFolderBusy(file, owner))
          .release,
      );
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
}
