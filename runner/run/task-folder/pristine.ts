// The runner's own copies of what a verdict depends on. At run start every SAM file and check asset
// is read (never through a link) into `runs/<id>/pristine/`, out of the agent's reach, and hashed
// there. Before each check phase the runner puts them back at their paths in the task folder and
// reports tampering for any path that is no longer the same regular file. Nothing here follows a
// symlink: every component is lstat'ed, and a link, FIFO, socket or device is removed, not opened.
// It runs only while no sandbox of the run is alive, so the agent cannot race it.
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  type Stats,
  writeFileSync,
} from "node:fs";
import { dirname, join, posix } from "node:path";
import { giveToOwner, lstatOrUndefined, MAX_HASH_BYTES, readTaskFile } from "../../policy/host-paths.ts";
import { TASK_MOUNT } from "../../policy/spec.ts";
import { showPath, walkTree } from "../../policy/tree-walk.ts";
import type { PristineFile, PristineSet } from "../../run-folder/state.ts";
import { assetOnlyFolders } from "../../sam/asset-folders.ts";
import { sha256 } from "../../sha256.ts";

export interface Tampered {
  file: string;
  problem: string;
  /** The tampered asset folder this file is in: its integrity event counts this file too. */
  within?: string;
}

export interface RestoreReport {
  tampering: Tampered[];
  /** Entries removed from asset folders (relative paths), or agent files at a hidden asset's path. */
  removed: string[];
  /** Of `removed`: Python byte-code caches of the folder's own assets (running a visible check writes them). */
  caches: string[];
}

/** A task file the pristine copy should hold. */
export interface PristineRequest {
  rel: string;
  kind: "sam" | "asset";
  hidden: boolean;
}

/** Reads every requested file without following links and keeps a copy under `dest`. */
export function capturePristine(
  taskDir: string,
  requests: readonly PristineRequest[],
  dest: string,
): PristineSet {
  mkdirSync(dest, { recursive: true, mode: 0o700 });
  const files: PristineFile[] = [];
  const seen = new Set<string>();
  for (const request of requests) {
    if (seen.has(request.rel)) continue;
    seen.add(request.rel);
    const data = readTaskFile(taskDir, request.rel, request.rel, MAX_HASH_BYTES);
    const stat = lstatSync(join(taskDir, request.rel));
    const copy = join(dest, request.rel);
    mkdirSync(dirname(copy), { recursive: true, mode: 0o700 });
    writeFileSync(copy, data, { mode: 0o600 });
    files.push({ ...request, sha256: sha256(data), mode: stat.mode & 0o777 });
  }
  return { files, folders: assetFolders(taskDir, files) };
}

/** Folders that held only check assets at start (runner/sam/asset-folders.ts). */
function assetFolders(taskDir: string, files: readonly PristineFile[]): string[] {
  return assetOnlyFolders(taskDir, new Set(files.filter((f) => f.kind === "asset").map((f) => f.rel)));
}

/** Takes hidden assets out of the task folder (their pristine copies stay in the run folder). */
export function hideAssets(taskDir: string, set: PristineSet): void {
  for (const file of set.files) {
    if (file.hidden) rmSync(join(taskDir, file.rel), { force: true, recursive: true });
  }
}

/**
 * Puts SAM files and check assets back from the pristine copy (hidden ones too when `withHidden`)
 * and cleans asset folders. Returns what was found wrong; everything found is also repaired.
 */
export function restorePristine(
  taskDir: string,
  pristineDir: string,
  set: PristineSet,
  withHidden: boolean,
  ids?: FolderIds,
): RestoreReport {
  const owner = lstatSync(taskDir);
  const report: RestoreReport = { tampering: [], removed: [], caches: [] };
  // Tampered asset folders: the files in them are counted with them (one integrity event a folder).
  const tampered: string[] = [];
  for (const folder of set.folders) {
    const chain = repairFolderChain(taskDir, folder, owner);
    // After a repair too: the folder made there is the one compared with from now on.
    const replaced = replacedFolder(taskDir, folder, ids);
    const problem = chain ?? replaced;
    if (problem) {
      const within = tampered.find((f) => folder.startsWith(`${f}/`));
      report.tampering.push({ file: folder, problem, ...(within ? { within } : {}) });
      if (!within) tampered.push(folder);
    }
    report.removed.push(...cleanFolder(taskDir, folder, set, report.caches));
  }
  for (const file of set.files) {
    if (file.hidden && !withHidden) continue;
    const chain = repairFolderChain(taskDir, posix.dirname(file.rel), owner);
    const problem = chain ?? fileProblem(taskDir, file);
    if (problem === undefined) continue;
    if (file.hidden && problem === "missing") {
      // Hidden assets are away from the task folder by design; nothing to report.
    } else if (file.hidden && problem !== "missing") {
      report.removed.push(file.rel);
    } else {
      // A file of a tampered asset folder is reported, and counted with its folder (`within`).
      const within = tampered.find((f) => file.rel.startsWith(`${f}/`));
      report.tampering.push({ file: file.rel, problem, ...(within ? { within } : {}) });
    }
    const target = join(taskDir, file.rel);
    rmSync(target, { force: true, recursive: true });
    writeFileSync(target, readFileSync(join(pristineDir, file.rel)), { mode: file.mode, flag: "wx" });
    giveToOwner(target, owner);
  }
  // A tampered folder's entry names the files of it that were wrong too (bounded): it is the one
  // the run's reason and the integrity event show.
  for (const entry of report.tampering) {
    if (!tampered.includes(entry.file) || entry.within !== undefined) continue;
    const inside = report.tampering.filter((t) => t.within === entry.file).map((t) => t.file);
    if (inside.length === 0) continue;
    const more = inside.length > 5 ? ` and ${inside.length - 5} more` : "";
    entry.problem += `; in it: ${inside.slice(0, 5).join(", ")}${more}`;
  }
  return report;
}

/** The identity (device, inode) of each asset folder, taken before any agent runs. */
export type FolderIds = Map<string, { dev: number; ino: number }>;

/** The asset folders' identities now (a folder not there, or not a folder, is left out). */
export function folderIds(taskDir: string, folders: readonly string[]): FolderIds {
  const ids: FolderIds = new Map();
  for (const folder of folders) {
    const stat = lstatOrUndefined(join(taskDir, folder));
    if (stat?.isDirectory()) ids.set(folder, { dev: stat.dev, ino: stat.ino });
  }
  return ids;
}

/**
 * Whether the asset folder at `folder` is another folder than the one taken at start (renamed away,
 * another made at its path, even with the same content: trust.md rule 2). The new one is then the
 * one compared with from now on, so one rename is one event.
 */
function replacedFolder(taskDir: string, folder: string, ids: FolderIds | undefined): string | undefined {
  const was = ids?.get(folder);
  const stat = lstatOrUndefined(join(taskDir, folder));
  if (!ids || !stat?.isDirectory()) return undefined;
  ids.set(folder, { dev: stat.dev, ino: stat.ino });
  if (!was || (was.dev === stat.dev && was.ino === stat.ino)) return undefined;
  return "the folder was replaced by another one (renamed or removed, and a folder made at its path)";
}

/** Whether the file at `file.rel` is still the same regular file; undefined when it is. */
function fileProblem(taskDir: string, file: PristineFile): string | undefined {
  const stat = lstatOrUndefined(join(taskDir, file.rel));
  if (!stat) return "missing";
  if (!stat.isFile()) return `replaced by ${describeNonFile(stat, join(taskDir, file.rel))}`;
  if (stat.nlink > 1) return "has other hard links (its content could be changed through them)";
  const actual = sha256(readTaskFile(taskDir, file.rel, file.rel, MAX_HASH_BYTES));
  return actual === file.sha256
    ? undefined
    : `changed content (sha256 ${file.sha256.slice(0, 12)}... -> ${actual.slice(0, 12)}...)`;
}

/**
 * Makes every component of `dir` a real folder, replacing links and non-folders on the way.
 * Returns what was wrong with the first bad component, if anything.
 */
function repairFolderChain(taskDir: string, dir: string, owner: Stats): string | undefined {
  if (dir === "." || dir === "") return undefined;
  let problem: string | undefined;
  let current = taskDir;
  let shown = "";
  for (const part of dir.split("/")) {
    current = join(current, part);
    shown = shown ? `${shown}/${part}` : part;
    const stat = lstatOrUndefined(current);
    if (stat?.isDirectory()) continue;
    problem ??= stat
      ? `its folder ${shown} was replaced by ${describeNonFile(stat, current)}`
      : `its folder ${shown} is missing (renamed or removed)`;
    if (stat) rmSync(current, { force: true, recursive: true });
    mkdirSync(current, { mode: 0o755 });
    giveToOwner(current, owner);
  }
  return problem;
}

/** Removes every entry of an asset folder that was not there at start. */
function cleanFolder(taskDir: string, folder: string, set: PristineSet, caches: string[]): string[] {
  const expected = new Set<string>([
    ...set.files.filter((f) => posix.dirname(f.rel) === folder).map((f) => f.rel),
    ...set.folders.filter((f) => posix.dirname(f) === folder),
  ]);
  const removed: string[] = [];
  const dir = Buffer.from(join(taskDir, folder));
  // Names as bytes: one that is not UTF-8 is never an expected one, and is removed like any other.
  for (const name of readdirSync(dir, { encoding: "buffer" })) {
    const text = name.toString("utf8");
    const rel = `${folder}/${text}`;
    if (Buffer.from(text).equals(name) && expected.has(rel)) continue;
    const path = Buffer.concat([dir, Buffer.from("/"), name]);
    if (text === "__pycache__" && isAssetByteCode(path.toString("utf8"), folder, set)) caches.push(rel);
    rmSync(path, { force: true, recursive: true });
    removed.push(`${folder}/${showPath(name)}`);
  }
  return removed;
}

/**
 * Whether `path` is a real folder holding only regular files `<stem>.<tag>.pyc` of Python assets of
 * `folder` (what `import` of a visible check's helper writes), and nothing else.
 */
function isAssetByteCode(path: string, folder: string, set: PristineSet): boolean {
  const stat = lstatOrUndefined(path);
  if (!stat?.isDirectory()) return false;
  const stems = new Set(
    set.files
      .filter((f) => !f.hidden && posix.dirname(f.rel) === folder && f.rel.endsWith(".py"))
      .map((f) => posix.basename(f.rel, ".py")),
  );
  const names = readdirSync(path);
  return names.every((name) => {
    const match = /^(.+)\.[A-Za-z0-9_-]+(\.opt-[12])?\.pyc$/.exec(name);
    return match?.[1] !== undefined && stems.has(match[1]) && lstatSync(join(path, name)).isFile();
  });
}

function describeNonFile(stat: Stats, path: string): string {
  if (stat.isSymbolicLink()) return `a symbolic link (-> ${safeReadlink(path)})`;
  if (stat.isDirectory()) return "a folder";
  if (stat.isFIFO()) return "a FIFO";
  if (stat.isSocket()) return "a socket";
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device file";
  if (stat.isFile()) return "a regular file";
  return "a special file";
}

function safeReadlink(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return "?";
  }
}

/** A symlink in the task folder that points out of it, or nowhere (from inside the sandbox). */
export interface DeliverableLink {
  path: string;
  target: string;
  problem: "outside" | "dangling";
}

/**
 * Symlinks among the deliverables that point outside the task folder or dangle, as the sandbox sees
 * them (`/task/...`). Walks the whole folder (runner/policy/tree-walk.ts: names as bytes, any depth)
 * without following any link. Paths are handled as byte strings (latin1: one character a byte), so
 * a name that is not UTF-8 is resolved like any other; shown as showPath writes it.
 */
export async function deliverableLinks(taskDir: string): Promise<DeliverableLink[]> {
  const found: DeliverableLink[] = [];
  const root = Buffer.from(taskDir).toString("latin1");
  await walkTree(
    taskDir,
    (entry) => {
      if (!entry.stat.isSymbolicLink()) return undefined;
      const rel = entry.relBytes.toString("latin1");
      const target = readlinkBytes(Buffer.from(`${root}/${rel}`, "latin1"));
      const from = posix.join(TASK_MOUNT, posix.dirname(rel));
      const problem = resolveInTask(root, posix.resolve(from, target), 0);
      if (problem)
        found.push({
          path: showPath(entry.relBytes),
          target: showPath(Buffer.from(target, "latin1")),
          problem,
        });
      return undefined;
    },
    { maxEntries: Number.POSITIVE_INFINITY },
  );
  return found;
}

/** A link's target as a byte string (latin1); "?" when it cannot be read. */
function readlinkBytes(path: Buffer): string {
  try {
    return readlinkSync(path, { encoding: "buffer" }).toString("latin1");
  } catch {
    return "?";
  }
}

/**
 * Resolves a container path one component at a time, as the sandbox's kernel would (every link on
 * the way, intermediate ones too), reading only what lies inside the task folder on the host. `root`
 * and `path` are byte strings (latin1).
 */
function resolveInTask(root: string, path: string, depth: number): DeliverableLink["problem"] | undefined {
  if (depth > 32) return "dangling";
  if (path !== TASK_MOUNT && !path.startsWith(`${TASK_MOUNT}/`)) return "outside";
  const parts = path
    .slice(TASK_MOUNT.length + 1)
    .split("/")
    .filter(Boolean);
  let current = TASK_MOUNT;
  for (const [i, part] of parts.entries()) {
    const next = `${current}/${part}`;
    const host = Buffer.from(`${root}/${next.slice(TASK_MOUNT.length + 1)}`, "latin1");
    const stat = lstatSync(host, { throwIfNoEntry: false });
    if (!stat) return "dangling";
    if (stat.isSymbolicLink()) {
      const target = readlinkBytes(host);
      const rest = parts.slice(i + 1).join("/");
      const resolved = posix.resolve(current, target);
      return resolveInTask(root, rest ? `${resolved}/${rest}` : resolved, depth + 1);
    }
    current = next;
  }
  return undefined;
}
