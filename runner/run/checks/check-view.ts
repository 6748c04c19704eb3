// Each run stage's view of the task folder, copy-on-write (issue 37): an overlay whose lower layer
// is the task folder as the work left it and whose upper layer is a fresh folder of the run's, so a
// view of 100,000 files costs a mount, not a copy. Nothing the check writes, removes or renames
// reaches the task folder (an overlay never writes its lower layer) or the next check (each gets a
// fresh upper). The lower stays unchanged while mounted: every process of the agent's is gone
// before the checks (phases/checks.ts) and the runner writes no task-folder file until they end.
// How, in order (docs/loop.md, "Checks that share nothing"):
// - `overlay`: the kernel's overlayfs, mounted by a runner that is root (Docker's root-run scifi);
// - `fuse-overlayfs`: mounted by a runner that is not root (Apptainer on a cluster), through FUSE;
// - `copy`: the full copy (check-copy.ts) when neither mounts, and the reason is kept.
// A view's special files (FIFOs, sockets, devices) are removed in the view, as the copy leaves them
// out; the mount is nosuid and nodev.
import { execFileSync } from "node:child_process";
import {
  accessSync,
  chmodSync,
  chownSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
} from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { ownerAlive, type PidLockOwner, readPidLock } from "../../pid-lock.ts";
import { showPath } from "../../policy/tree-walk.ts";
import { type CopyOptions, copyForChecks, removeCopy } from "./check-copy.ts";

export type ViewKind = "overlay" | "fuse-overlayfs" | "copy";
export const VIEW_KINDS: readonly ViewKind[] = ["overlay", "fuse-overlayfs", "copy"];

export interface CheckView {
  /** The view, where the sandbox mounts /task from and the outputs are copied out of. */
  dir: string;
  kind: ViewKind;
  /** Entries of the task folder left out of the view (paths as showPath writes them). */
  skipped: string[];
  /** Why the kinds before `kind` were not used (empty when the first one was). */
  notUsed: string[];
}

export interface ViewOptions extends CopyOptions {
  /** The kinds to try, in order (default VIEW_KINDS); `copy` is always the last resort. */
  kinds?: readonly ViewKind[];
  /**
   * The engine that binds the view runs as another user than the runner (the Docker daemon): a
   * FUSE mount of a runner that is not root is then usable only with `allow_other`.
   */
  engineIsOtherUser?: boolean;
}

/**
 * The view kinds to try (check-view.ts): SCIFI_CHECK_VIEW names one or a comma-separated list
 * (`copy` forces the copy, as a site whose file system refuses overlays may want).
 */
export function checkViewKinds(env: NodeJS.ProcessEnv = process.env): ViewKind[] {
  const asked = env.SCIFI_CHECK_VIEW?.split(",")
    .map((k) => k.trim())
    .filter(Boolean);
  if (!asked || asked.length === 0) return [...VIEW_KINDS];
  const unknown = asked.filter((k) => !VIEW_KINDS.includes(k as ViewKind));
  if (unknown.length > 0) {
    throw new Error(
      `SCIFI_CHECK_VIEW: unknown view kind ${unknown.map((k) => JSON.stringify(k)).join(", ")}; use ${VIEW_KINDS.join(", ")} (comma-separated, tried in order)`,
    );
  }
  return asked as ViewKind[];
}

/** Where a view's upper and work folders go: beside the view, named after it. */
export function layersDir(viewDir: string): string {
  return `${viewDir}.layers`;
}

/**
 * A view of `taskDir` at `viewDir` (emptied first, a leftover mount there unmounted). An overlay's
 * upper root gets the task folder's mode and `options.owner` (the sandbox's user of a root runner).
 */
export function makeCheckView(taskDir: string, viewDir: string, options: ViewOptions): CheckView {
  dropCheckView(viewDir);
  const notUsed: string[] = [];
  const root = process.getuid?.() === 0;
  const kinds = options.kinds ?? VIEW_KINDS;
  // A person's own order (SCIFI_CHECK_VIEW): every kind it names and the runner passes over is said.
  const forced = kinds.join() !== VIEW_KINDS.join();
  for (const kind of kinds) {
    if (kind === "copy") break;
    // Only root mounts a kernel overlay that the sandbox's engine sees: not a fallback of the
    // default order, so said only when a person asked for it (SCIFI_CHECK_VIEW).
    if (kind === "overlay" && !root) {
      if (forced)
        notUsed.push("overlay: the runner is not root (only root mounts a kernel overlay the engine sees)");
      continue;
    }
    const hazard = kind === "fuse-overlayfs" ? fuseHazard(taskDir) : undefined;
    if (hazard) {
      notUsed.push(`${kind}: ${hazard}`);
      continue;
    }
    let why = tryMount(kind, taskDir, viewDir, options);
    if (why === undefined) {
      try {
        if (kind === "fuse-overlayfs") refuseLongPaths(taskDir, viewDir);
        return { dir: viewDir, kind, skipped: sanitize(taskDir, viewDir), notUsed };
      } catch (error) {
        why = `the view could not be made safe: ${messageOf(error)}`;
      }
    }
    notUsed.push(`${kind}: ${why}`);
    dropCheckView(viewDir);
  }
  if (!kinds.includes("copy"))
    notUsed.push("copy was not asked for: it is the last resort when no other kind mounts");
  return { dir: viewDir, kind: "copy", skipped: copyForChecks(taskDir, viewDir, options), notUsed };
}

/** Files above this size are copied up whole by fuse-overlayfs on any change, holes filled. */
const SPARSE_COPYUP_BYTES = 64 * 1024 ** 2;

/**
 * Why fuse-overlayfs would show the checks something else than the task folder, or cost what the
 * work did not: it reads a name `.wh.<name>` in its lower layer as a whiteout (hiding `<name>`, a
 * check asset or task.md included) and an opaque marker, and copies a file up whole, holes
 * filled, the moment a check touches it (a 1 TB sparse file costs the work nothing and the run
 * folder a terabyte). The copy keeps both as they are. Undefined: none of either.
 */
function fuseHazard(taskDir: string): string | undefined {
  const found = execFileSync(
    "find",
    [
      taskDir,
      "-mindepth",
      "1",
      "(",
      "-name",
      ".wh.*",
      "-printf",
      "W%P\\0",
      "-quit",
      ")",
      "-o",
      "(",
      "-type",
      "f",
      "-size",
      `+${SPARSE_COPYUP_BYTES / 1024}k`,
      "-printf",
      "S%S %P\\0",
      ")",
    ],
    { maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] },
  );
  for (let start = 0; start < found.length; ) {
    const end = found.indexOf(0, start);
    const entry = found.subarray(start, end === -1 ? found.length : end);
    start = end === -1 ? found.length : end + 1;
    if (entry[0] === 0x57 /* W */)
      return `the task folder holds ${showPath(entry.subarray(1))}, a name fuse-overlayfs reads as a whiteout (it would hide a file from the checks)`;
    const space = entry.indexOf(0x20);
    const sparseness = Number(entry.subarray(1, space).toString("latin1"));
    if (sparseness < 0.5)
      return `the task folder holds ${showPath(entry.subarray(space + 1))}, a sparse file fuse-overlayfs would copy up whole if a check touched it`;
  }
  return undefined;
}

/** Unmounts the view at `viewDir` if one is mounted, and removes it and its layers. Never follows a link. */
export function dropCheckView(viewDir: string): void {
  for (const dir of new Set([viewDir, realOrSelf(viewDir)])) {
    for (const mount of mountsAt(dir)) unmount(dir, mount);
  }
  removeCopy(viewDir);
  removeCopy(layersDir(viewDir));
}

/** The folder name of a run stage's view in a run folder (task-folder.ts `checksCopyDirs`). */
export const VIEW_FOLDER = "checks-copy";
/** Both view folders of a run: the running stage's and the next one's, made ready while it runs. */
export const VIEW_FOLDERS: readonly string[] = [VIEW_FOLDER, `${VIEW_FOLDER}-2`];
/** The asset folders bound into those views' sandboxes, one per view folder, in the same order. */
export const ASSET_FOLDERS: readonly string[] = ["check-assets", "check-assets-2"];

/**
 * Views left mounted under `<home>/runs/` by runs whose driver is gone (SIGKILL, a crash: no
 * cleanup ran), unmounted and removed; then what such runs' checks left unmounted (a copy-kind
 * view, two of them at most, and the asset folders): removed. Their paths. A run whose lock
 * (`run.lock`) names a live process, or a process on another host, or that is in `liveRunIds`, is kept.
 */
export function pruneCheckViews(home: string, liveRunIds: ReadonlySet<string> = new Set()): string[] {
  const runs = `${resolve(home, "runs")}/`;
  const removed: string[] = [];
  const gone = (at: string, runId: string) => {
    if (liveRunIds.has(runId)) return false;
    const owner = readPidLock<PidLockOwner>(join(at, runId, "run.lock"));
    return !owner || (owner.host === hostname() && !ownerAlive(owner));
  };
  for (const at of new Set([runs, `${realOrSelf(runs.slice(0, -1))}/`])) {
    for (const dir of mountPoints()) {
      if (!dir.startsWith(at)) continue;
      const [runId, folder, ...rest] = dir.slice(at.length).split("/");
      if (!runId || !folder || !VIEW_FOLDERS.includes(folder) || rest.length > 0 || !gone(at, runId))
        continue;
      dropCheckView(dir);
      removed.push(dir);
    }
  }
  for (const runId of existsSync(runs) ? readdirSync(runs) : []) {
    const left = [...VIEW_FOLDERS, ...ASSET_FOLDERS].map((f) => join(runs, runId, f));
    if (!left.some((dir) => existsSync(dir)) || !gone(runs, runId)) continue;
    for (const dir of left.filter((d) => existsSync(d))) {
      dropCheckView(dir);
      removed.push(dir);
    }
  }
  return removed;
}

/** Why `kind` did not mount, or undefined when it did. */
function tryMount(
  kind: ViewKind,
  taskDir: string,
  viewDir: string,
  options: ViewOptions,
): string | undefined {
  const root = process.getuid?.() === 0;
  const allowOther = root || options.engineIsOtherUser === true;
  if (kind === "fuse-overlayfs") {
    try {
      accessSync("/dev/fuse", constants.R_OK | constants.W_OK);
    } catch {
      return "/dev/fuse is missing or not usable";
    }
    if (!root && allowOther && !userAllowOther()) {
      return "the sandbox engine runs as another user, and /etc/fuse.conf lacks user_allow_other (without it no one else reads the runner's FUSE mount)";
    }
  }
  const layers = layersDir(viewDir);
  const upper = join(layers, "upper");
  const work = join(layers, "work");
  // Mount options are a comma-separated list, and ':' separates lower layers: such paths are not
  // escaped (util-linux and fuse-overlayfs differ), the next kind is tried.
  const unsafe = [taskDir, upper, work].find((p) => /[,:\\\s]/.test(p));
  if (unsafe) return `the path ${JSON.stringify(unsafe)} holds a character mount options cannot carry`;
  const top = lstatSync(taskDir);
  for (const d of [viewDir, layers, upper, work]) mkdirSync(d, { recursive: true, mode: 0o700 });
  chmodSync(viewDir, 0o755);
  chmodSync(layers, 0o711);
  chmodSync(upper, top.mode & 0o777);
  if (options.owner) chownSync(upper, options.owner.uid, options.owner.gid);
  const layerOptions = `lowerdir=${taskDir},upperdir=${upper},workdir=${work}`;
  try {
    if (kind === "overlay") {
      // metacopy: a chown or chmod in the view (a root runner lends it to the sandbox's user) copies
      // the metadata up, not the file.
      const base = ["-t", "overlay", "overlay", "-o"];
      const tail = ["nosuid,nodev", viewDir];
      // redirect_dir: a folder of the lower layer can be renamed in the view (else EXDEV).
      const extras = [",metacopy=on,redirect_dir=on,index=off", ",redirect_dir=on", ""];
      for (const [i, extra] of extras.entries()) {
        try {
          run("mount", [...base, `${layerOptions}${extra}`, "-o", ...tail]);
          break;
        } catch (error) {
          if (i === extras.length - 1) throw error;
        }
      }
    } else {
      run("fuse-overlayfs", [
        "-o",
        `${layerOptions},nosuid,nodev${allowOther ? ",allow_other" : ""}`,
        viewDir,
      ]);
    }
  } catch (error) {
    return messageOf(error);
  }
  return undefined;
}

/** Whether /etc/fuse.conf lets a user that is not root mount with allow_other. */
function userAllowOther(): boolean {
  try {
    return /^\s*user_allow_other\s*$/m.test(readFileSync("/etc/fuse.conf", "utf8"));
  } catch {
    return false;
  }
}

/** Paths this long (bytes, the view's path included) are left out of a view, as the copy does. */
const PATH_BYTES = 4000;
/** Names are at most 255 bytes: a path of PATH_BYTES lies this deep at least. */
const LONG_DEPTH = Math.floor(PATH_BYTES / 256);

/**
 * fuse-overlayfs names each entry by its path from the layer's root, so an entry past PATH_MAX (a
 * folder chain thousands deep) cannot be listed in the view: the copy is used, which leaves it out.
 */
function refuseLongPaths(taskDir: string, viewDir: string): void {
  const deep = execFileSync("find", [taskDir, "-mindepth", String(LONG_DEPTH), "-printf", "%P\\0"], {
    maxBuffer: 256 * 1024 * 1024,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const room = PATH_BYTES - Buffer.byteLength(viewDir) - 1;
  for (let start = 0; start < deep.length; ) {
    const end = deep.indexOf(0, start);
    const length = (end === -1 ? deep.length : end) - start;
    if (length >= room) {
      throw new Error(
        `${showPath(deep.subarray(start, start + 60))}... is a path too long for fuse-overlayfs to name`,
      );
    }
    start = end === -1 ? deep.length : end + 1;
  }
}

/**
 * Special files removed from the view, as the copy leaves them out: the listing reads the task
 * folder (the lower layer; `-type` alone needs no stat per entry), the removals go to the upper
 * layer. Set-id bits stay as the work left them and do nothing: the view is mounted nosuid (a FUSE
 * mount of a user always is), the Docker sandbox has no-new-privileges, Apptainer binds nosuid, and
 * no file in the folder is owned by anyone but its owner and the sandbox's user.
 */
function sanitize(taskDir: string, viewDir: string): string[] {
  const found = execFileSync(
    "find",
    [
      taskDir,
      "-mindepth",
      "1",
      "(",
      "-type",
      "p",
      "-o",
      "-type",
      "s",
      "-o",
      "-type",
      "b",
      "-o",
      "-type",
      "c",
      ")",
      "-printf",
      "%P\\0",
    ],
    { maxBuffer: 256 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] },
  );
  const skipped: string[] = [];
  for (let start = 0; start < found.length; ) {
    const end = found.indexOf(0, start);
    const rel = found.subarray(start, end === -1 ? found.length : end);
    start = end === -1 ? found.length : end + 1;
    rmSync(Buffer.concat([Buffer.from(`${viewDir}/`), rel]), { force: true });
    skipped.push(showPath(rel));
  }
  return skipped;
}

/** This process's mount table: mount point and file system type, in mount order. */
function mountTable(): { dir: string; fsType: string }[] {
  let table: string;
  try {
    table = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return [];
  }
  return table
    .split("\n")
    .map((line) => line.split(" "))
    .filter((fields) => fields.indexOf("-") > 0)
    .map((fields) => ({
      dir: unescapeMount(fields[4] ?? ""),
      fsType: fields[fields.indexOf("-") + 1] ?? "",
    }));
}

function mountPoints(): Set<string> {
  return new Set(mountTable().map((m) => m.dir));
}

/** The mounts at `dir` (innermost first), by file system type. */
function mountsAt(dir: string): string[] {
  return mountTable()
    .filter((m) => m.dir === dir)
    .map((m) => m.fsType)
    .reverse();
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** One mount at `dir` undone; a busy one is detached (what still holds it keeps it, no one else sees it). */
function unmount(dir: string, fsType: string): void {
  const fuse = fsType.startsWith("fuse") && process.getuid?.() !== 0;
  const attempts = fuse
    ? [
        ["fusermount3", "-u", dir],
        ["fusermount3", "-uz", dir],
        ["fusermount", "-uz", dir],
      ]
    : [
        ["umount", dir],
        ["umount", "-l", dir],
      ];
  const errors: string[] = [];
  for (const [command, ...args] of attempts) {
    try {
      run(command as string, args);
      return;
    } catch (error) {
      errors.push(messageOf(error));
    }
  }
  throw new Error(
    `cannot unmount the checks' view at ${dir}: ${errors.join("; ")}; unmount it (umount or fusermount3 -u) and remove the folder`,
  );
}

function run(command: string, args: string[]): void {
  execFileSync(command, args, { stdio: ["ignore", "ignore", "pipe"], timeout: 30_000 });
}

function messageOf(error: unknown): string {
  const stderr = (error as { stderr?: Buffer }).stderr?.toString("utf8").trim();
  if (stderr) return stderr.split("\n")[0] as string;
  return error instanceof Error ? error.message : String(error);
}
