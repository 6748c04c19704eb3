// Host-side access to files in a task folder that never follows a link out of it. The container can
// write into the task folder, so it can plant symlinks there; any host component that reads or writes
// task files (sandbox readFile/writeFile, result collection, reports) must go through these functions.
//
// Race-aware: every path component is opened relative to the already-opened parent directory
// (`/proc/self/fd/<dirfd>/<name>` acts as openat(2)) with O_NOFOLLOW, so a link swapped in between a
// check and the open is refused instead of followed. Linux only, like the sandboxes themselves.
import { createHash } from "node:crypto";
import {
  chownSync,
  closeSync,
  constants,
  fchownSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  type Stats,
  writeFileSync,
} from "node:fs";
import { type FileHandle, lchown, lstat, open, opendir } from "node:fs/promises";
import { posix } from "node:path";
import type { MountSpec } from "./spec.ts";

/**
 * A host-side path that may not be used. Defined here, not in the sandbox layer, so that leaf
 * components (reports, result collection) can use these functions too; sandbox backends turn it
 * into their contract's PathRefused.
 */
export class HostPathRefused extends Error {
  override name = "HostPathRefused";
  readonly path: string;
  readonly reason: string;
  constructor(path: string, reason: string) {
    super(`refused path '${path}': ${reason}`);
    this.path = path;
    this.reason = reason;
  }
}

const { O_RDONLY, O_WRONLY, O_CREAT, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Where a sandbox file operation goes: the host task folder, or through the container. */
export type PathRoute =
  | { where: "task"; rel: string; readOnly: false }
  | { where: "container"; path: string; readOnly: boolean };

/**
 * Routes a container path by the deepest mount that holds it: paths in the task folder itself are
 * served on the host (fast, no exec); paths under any other mount (a declared mount, the read-only
 * SAM file bound over itself) or outside all mounts go through the container.
 */
export function routePath(
  spec: { workdir: string; mounts: readonly MountSpec[] },
  containerPath: string,
): PathRoute {
  const absolute = posix.resolve(spec.workdir, containerPath);
  let best: MountSpec | undefined;
  for (const mount of spec.mounts) {
    const holds = absolute === mount.target || absolute.startsWith(`${mount.target}/`);
    if (holds && (!best || mount.target.length > best.target.length)) best = mount;
  }
  if (best && best.target === spec.workdir && !best.readOnly) {
    return { where: "task", rel: absolute.slice(spec.workdir.length + 1), readOnly: false };
  }
  return { where: "container", path: absolute, readOnly: best?.readOnly ?? false };
}

/**
 * Most bytes one sandbox readFile returns, on every backend (host-side task files and container
 * files alike): a bigger file is refused with a hint to read part of it with a command.
 */
export const MAX_READ_BYTES = 64 * 1024 * 1024;

/**
 * Reads `rel` inside `taskDir` without following any symlink; refuses non-regular files (FIFOs,
 * sockets, devices: opened O_NONBLOCK, so nothing blocks) and files over `maxBytes`.
 */
export function readTaskFile(taskDir: string, rel: string, shownAs = rel, maxBytes = MAX_READ_BYTES): Buffer {
  const { dirs, name } = splitRelative(rel, shownAs);
  const dirFd = openDirectoryChain(taskDir, dirs, false, shownAs);
  let fd: number | undefined;
  try {
    fd = openNoFollow(dirFd, name, O_RDONLY | O_NONBLOCK, shownAs);
    requireRegularFile(fd, shownAs);
    return readCapped(fd, maxBytes, shownAs);
  } finally {
    if (fd !== undefined) closeSync(fd);
    closeSync(dirFd);
  }
}

/**
 * Writes `rel` inside `taskDir` (creating parent folders) without following any symlink. `owner`:
 * new folders and the file are given to this uid:gid (a root runner writing for an unprivileged
 * sandbox user, so the sandbox can change what the runner wrote).
 */
export function writeTaskFile(
  taskDir: string,
  rel: string,
  data: string | Buffer,
  shownAs = rel,
  owner?: { uid: number; gid: number },
): void {
  const { dirs, name } = splitRelative(rel, shownAs);
  const dirFd = openDirectoryChain(taskDir, dirs, true, shownAs, owner);
  let fd: number | undefined;
  try {
    // No O_TRUNC at open: the file is checked first (a hard link must not let us clobber its twin).
    fd = openNoFollow(dirFd, name, O_WRONLY | O_CREAT | O_NONBLOCK, shownAs, 0o644);
    const stat = requireRegularFile(fd, shownAs);
    if (stat.nlink > 1) throw new HostPathRefused(shownAs, "the file has other hard links; remove it first");
    ftruncateSync(fd, 0);
    writeFileSync(fd, data);
    if (owner && (stat.uid !== owner.uid || stat.gid !== owner.gid)) fchownSync(fd, owner.uid, owner.gid);
  } finally {
    if (fd !== undefined) closeSync(fd);
    closeSync(dirFd);
  }
}

/** Default cap of hashRegularFile: a SAM file or a check asset larger than this is refused. */
export const MAX_HASH_BYTES = 1024 ** 3;

/**
 * sha256 (hex) of a regular file, or "missing" when nothing is there. Never follows a link: with
 * `root`, `path` is relative to it and every component is opened O_NOFOLLOW from the one before;
 * without, only the last component is (use it for paths whose folders the agent cannot change).
 * Opened O_NONBLOCK and checked with fstat: a FIFO, socket or device is refused (HostPathRefused)
 * without blocking; more than `maxBytes` is refused too.
 */
export function hashRegularFile(path: string, options: { root?: string; maxBytes?: number } = {}): string {
  const maxBytes = options.maxBytes ?? MAX_HASH_BYTES;
  let dirFd: number | undefined;
  let fd: number | undefined;
  try {
    try {
      if (options.root !== undefined) {
        const { dirs, name } = splitRelative(path, path);
        dirFd = openDirectoryChain(options.root, dirs, false, path);
        fd = openNoFollow(dirFd, name, O_RDONLY | O_NONBLOCK, path);
      } else {
        fd = openSync(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
      }
    } catch (error) {
      if (errorCode(error) === "ENOENT") return "missing";
      if (errorCode(error) === "ELOOP" || errorCode(error) === "ENOTDIR")
        throw new HostPathRefused(
          path,
          "a symbolic link (or not a folder) is on the path; links are never followed",
        );
      throw error;
    }
    const stat = requireRegularFile(fd, path);
    if (stat.size > maxBytes) throw new HostPathRefused(path, `larger than ${maxBytes} bytes`);
    const hash = createHash("sha256");
    const chunk = Buffer.allocUnsafe(1024 * 1024);
    let total = 0;
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      total += n;
      if (total > maxBytes) throw new HostPathRefused(path, `larger than ${maxBytes} bytes`);
      hash.update(chunk.subarray(0, n));
    }
    return hash.digest("hex");
  } finally {
    if (fd !== undefined) closeSync(fd);
    if (dirFd !== undefined) closeSync(dirFd);
  }
}

/** Reads an open regular file to its end, refusing it once it holds more than `maxBytes`. */
function readCapped(fd: number, maxBytes: number, shownAs: string): Buffer {
  const tooBig = () =>
    new HostPathRefused(
      shownAs,
      `the file is larger than ${maxBytes} bytes, the most one read returns; read a part of it with a command (head, tail, sed -n)`,
    );
  if (fstatSync(fd).size > maxBytes) throw tooBig();
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(1024 * 1024, maxBytes + 1 - total));
    const n = readSync(fd, chunk, 0, chunk.length, null);
    if (n === 0) break;
    chunks.push(chunk.subarray(0, n));
    total += n;
    if (total > maxBytes) throw tooBig(); // it grew after the fstat
  }
  return Buffer.concat(chunks, total);
}

function splitRelative(rel: string, shownAs: string): { dirs: string[]; name: string } {
  const parts = rel.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.some((p) => p === "..")) throw new HostPathRefused(shownAs, "'..' may not leave the task folder");
  const name = parts.pop();
  if (name === undefined) throw new HostPathRefused(shownAs, "this is the task folder itself, not a file");
  return { dirs: parts, name };
}

function openDirectoryChain(
  taskDir: string,
  dirs: string[],
  create: boolean,
  shownAs: string,
  owner?: { uid: number; gid: number },
): number {
  let fd = openSync(taskDir, O_RDONLY | O_DIRECTORY);
  try {
    for (const dir of dirs) {
      const next = openDirectory(fd, dir, create, shownAs, owner);
      closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function openDirectory(
  parentFd: number,
  name: string,
  create: boolean,
  shownAs: string,
  owner?: { uid: number; gid: number },
): number {
  const at = `/proc/self/fd/${parentFd}/${name}`;
  try {
    return openSync(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" && create) {
      mkdirSync(at, { mode: 0o755 });
      const fd = openSync(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      if (owner) fchownSync(fd, owner.uid, owner.gid);
      return fd;
    }
    throw refusal(code, error, shownAs, `folder '${name}'`);
  }
}

function openNoFollow(dirFd: number, name: string, flags: number, shownAs: string, mode?: number): number {
  try {
    return openSync(`/proc/self/fd/${dirFd}/${name}`, flags | O_NOFOLLOW, mode);
  } catch (error) {
    throw refusal(errorCode(error), error, shownAs, `'${name}'`);
  }
}

function requireRegularFile(fd: number, shownAs: string) {
  const stat = fstatSync(fd);
  if (!stat.isFile()) throw new HostPathRefused(shownAs, "not a regular file");
  return stat;
}

/** ELOOP/ENOTDIR from an O_NOFOLLOW open mean a symlink sits on the path: that is a refusal. */
function refusal(code: string | undefined, error: unknown, shownAs: string, what: string): Error {
  if (code === "ELOOP" || code === "ENOTDIR") {
    return new HostPathRefused(
      shownAs,
      `${what} is a symbolic link (or not a folder); links are never followed on the host`,
    );
  }
  if (code === "ENOENT") {
    return Object.assign(new Error(`${shownAs}: no such file or folder in the task folder`), { code });
  }
  if (code === "ENXIO") {
    // A socket, or a FIFO opened for writing with no reader: never a regular file.
    return new HostPathRefused(shownAs, `${what} is not a regular file (a socket or a FIFO)`);
  }
  return error instanceof Error ? error : new Error(String(error));
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Walking a task folder the agent can change: each folder opened O_NOFOLLOW relative to its already
// open parent, asynchronously (the event loop never waits on it), bounded in entries and depth.

/** A walk stops (WalkLimitExceeded) past this many entries or this depth. */
export const MAX_WALK_ENTRIES = 500_000;
export const MAX_WALK_DEPTH = 256;

export interface WalkLimits {
  maxEntries?: number;
  maxDepth?: number;
}

/** A task folder too large or too deep to walk within the limits. */
export class WalkLimitExceeded extends HostPathRefused {
  override name = "WalkLimitExceeded";
}

export interface TreeEntry {
  /** Path relative to the root; "" for the root itself. */
  rel: string;
  /** lstat of the entry (fstat of the open handle for folders). */
  stat: import("node:fs").Stats;
  /** The open folder (the root included); undefined for anything else. */
  dir?: FileHandle;
  /** `/proc/self/fd/<parent>/<name>`: names the entry without following a link, during the visit only. */
  at: string;
}

const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** Walks `root` (exported for the run's change snapshot, runner/report/changes.ts). */
export async function walkTree(
  root: string,
  visit: (entry: TreeEntry) => Promise<void> | void,
  limits: WalkLimits = {},
): Promise<void> {
  const maxEntries = limits.maxEntries ?? MAX_WALK_ENTRIES;
  const maxDepth = limits.maxDepth ?? MAX_WALK_DEPTH;
  let entries = 0;
  const walkDir = async (handle: FileHandle, rel: string, depth: number): Promise<void> => {
    // Streamed: a folder with millions of names is never listed into memory at once.
    const listing = await opendir(`/proc/self/fd/${handle.fd}`, { bufferSize: 256 });
    for await (const { name } of listing) {
      if (++entries > maxEntries)
        throw new WalkLimitExceeded(root, `the folder holds more than ${maxEntries} entries`);
      const at = `/proc/self/fd/${handle.fd}/${name}`;
      const childRel = rel ? `${rel}/${name}` : name;
      const stat = await lstat(at).catch((e: unknown) => gone(e));
      if (!stat) continue;
      if (!stat.isDirectory()) {
        await visit({ rel: childRel, stat, at });
        continue;
      }
      if (depth + 1 > maxDepth)
        throw new WalkLimitExceeded(root, `folders nest deeper than ${maxDepth} levels (${childRel})`);
      const child = await openFolder(at, stat);
      if (!child) continue;
      try {
        await visit({ rel: childRel, stat: await child.stat(), dir: child, at });
        await walkDir(child, childRel, depth + 1);
      } finally {
        await child.close();
      }
    }
  };
  const rootHandle = await open(root, DIR_FLAGS);
  try {
    await visit({
      rel: "",
      stat: await rootHandle.stat(),
      dir: rootHandle,
      at: `/proc/self/fd/${rootHandle.fd}`,
    });
    await walkDir(rootHandle, "", 0);
  } finally {
    await rootHandle.close();
  }
}

/**
 * Opens a sub-folder without following a link; undefined when it vanished or was swapped for a
 * non-folder. A folder its owner made unreadable (mode 000) is opened up (u+rwx) first: a hidden
 * folder must not hide setuid files or used space from the runner.
 */
async function openFolder(at: string, stat: import("node:fs").Stats): Promise<FileHandle | undefined> {
  try {
    return await open(at, DIR_FLAGS);
  } catch (error) {
    const code = errorCode(error);
    if (code === "EACCES" && stat.uid === process.getuid?.()) {
      const { chmod } = await import("node:fs/promises");
      // lstat said folder; a link swapped in since would have its target chmod-ed, so lstat again.
      const again = await lstat(at).catch(() => undefined);
      if (again?.isDirectory() && again.ino === stat.ino) {
        await chmod(at, (again.mode & 0o7777) | 0o700).catch(() => undefined);
        return open(at, DIR_FLAGS).catch(() => undefined);
      }
      return undefined;
    }
    if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR") return undefined;
    throw error;
  }
}

function gone(error: unknown): undefined {
  if (errorCode(error) === "ENOENT") return undefined;
  throw error;
}

function inodeKey(stat: import("node:fs").Stats): string {
  return `${stat.dev}:${stat.ino}`;
}

export interface TreeUsage {
  /** Allocated bytes (st_blocks x 512: a sparse file counts what it really holds), each inode once. */
  allocatedBytes: number;
  entries: number;
}

/**
 * What a task folder takes on disk, without following links (the disk quota's measure). Throws
 * WalkLimitExceeded past the walk limits.
 */
export async function measureTaskFolder(root: string, limits: WalkLimits = {}): Promise<TreeUsage> {
  const seen = new Set<string>();
  let allocatedBytes = 0;
  let entries = 0;
  await walkTree(
    root,
    ({ stat }) => {
      entries++;
      const key = inodeKey(stat);
      if (seen.has(key)) return;
      seen.add(key);
      allocatedBytes += stat.blocks * 512;
    },
    limits,
  );
  return { allocatedBytes, entries };
}

/**
 * Clears the setuid and setgid bits of every file and folder in `root` (the root included), never
 * following a link. Returns the relative paths it changed ("" is the root). Run it after the sandbox
 * has stopped: nothing then changes the tree under the walk.
 */
export async function clearPrivilegeBits(root: string, limits: WalkLimits = {}): Promise<string[]> {
  const cleared: string[] = [];
  await walkTree(
    root,
    async ({ rel, stat, dir, at }) => {
      if ((stat.mode & 0o6000) === 0 || !(stat.isFile() || stat.isDirectory())) return;
      const mode = stat.mode & 0o1777;
      try {
        if (dir) await dir.chmod(mode);
        else await chmodRegular(at, stat, mode);
      } catch (error) {
        // Someone else's file (put there by root before the run, not by the sandbox): not ours to change.
        if (errorCode(error) === "EPERM" && stat.uid !== process.getuid?.()) return;
        throw error;
      }
      cleared.push(rel);
    },
    limits,
  );
  return cleared;
}

/** fchmod through an O_NOFOLLOW|O_NONBLOCK open of the same regular file (a path chmod if it is unreadable). */
async function chmodRegular(at: string, stat: import("node:fs").Stats, mode: number): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(at, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    if (errorCode(error) !== "EACCES") throw error;
    const { chmod } = await import("node:fs/promises");
    const again = await lstat(at);
    if (again.isFile() && again.ino === stat.ino) await chmod(at, mode);
    return;
  }
  try {
    const opened = await handle.stat();
    if (opened.isFile() && opened.ino === stat.ino) await handle.chmod(mode);
  } finally {
    await handle.close();
  }
}

/** Who owned what in a task folder before it was lent to a sandbox user (see lendTaskFolder). */
export interface OwnershipRecord {
  root: string;
  /** The owner of the task folder itself: what entries made during the run are given. */
  rootOwner: { uid: number; gid: number };
  /** Every entry's owner, by inode. */
  owners: Map<string, { uid: number; gid: number }>;
}

/**
 * Gives every entry of `root` (the root included, links themselves, never their targets) to
 * `user`, recording who owned it: a root-run scifi lends the task folder to the unprivileged
 * sandbox user this way. `returnTaskFolder` gives everything back. Needs root.
 */
export async function lendTaskFolder(
  root: string,
  user: { uid: number; gid: number },
  limits: WalkLimits = {},
): Promise<OwnershipRecord> {
  const owners = new Map<string, { uid: number; gid: number }>();
  let rootOwner = { uid: 0, gid: 0 };
  await walkTree(
    root,
    async (entry) => {
      const { stat } = entry;
      if (entry.rel === "") rootOwner = { uid: stat.uid, gid: stat.gid };
      owners.set(inodeKey(stat), { uid: stat.uid, gid: stat.gid });
      if (stat.uid !== user.uid || stat.gid !== user.gid) await chownEntry(entry, user);
    },
    limits,
  );
  return { root, rootOwner, owners };
}

/**
 * Gives the task folder back after a sandbox ran as another user: every entry that existed before
 * gets its recorded owner again; entries made during the run get the task folder's owner.
 */
export async function returnTaskFolder(record: OwnershipRecord, limits: WalkLimits = {}): Promise<void> {
  await walkTree(
    record.root,
    async (entry) => {
      const owner = record.owners.get(inodeKey(entry.stat)) ?? record.rootOwner;
      if (entry.stat.uid !== owner.uid || entry.stat.gid !== owner.gid) await chownEntry(entry, owner);
    },
    limits,
  );
}

async function chownEntry(entry: TreeEntry, owner: { uid: number; gid: number }): Promise<void> {
  if (entry.dir) await entry.dir.chown(owner.uid, owner.gid);
  else await lchown(entry.at, owner.uid, owner.gid).catch((e: unknown) => gone(e));
}

/** lstat, or undefined for a path that is not there (never follows the last component). */
export function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/**
 * A file the runner (re)creates in a task folder belongs to the folder's owner, as the rest of it
 * does, when the runner is root. Not fatal when it fails: the file is there either way.
 */
export function giveToOwner(path: string, owner: Pick<Stats, "uid" | "gid">): void {
  if (process.getuid?.() !== 0) return;
  try {
    chownSync(path, owner.uid, owner.gid);
  } catch {
    // the file keeps the runner's owner; readable either way
  }
}
