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
import { posix } from "node:path";
import { HostPathRefused } from "./host-path-refused.ts";
import type { MountSpec } from "./spec.ts";

export { HostPathRefused };

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
 * Like readTaskFile, but a file over `maxBytes` is not refused: its first `maxBytes` are returned
 * with `window: true` (the critique's citation check reads a window of a padded file).
 */
export function readTaskFileWindow(
  taskDir: string,
  rel: string,
  shownAs: string,
  maxBytes: number,
): { bytes: Buffer; window: boolean } {
  const { dirs, name } = splitRelative(rel, shownAs);
  const dirFd = openDirectoryChain(taskDir, dirs, false, shownAs);
  let fd: number | undefined;
  try {
    fd = openNoFollow(dirFd, name, O_RDONLY | O_NONBLOCK, shownAs);
    requireRegularFile(fd, shownAs);
    const bytes = Buffer.allocUnsafe(maxBytes + 1);
    let total = 0;
    for (;;) {
      const n = readSync(fd, bytes, total, bytes.length - total, null);
      if (n === 0) break;
      total += n;
      if (total === bytes.length) break;
    }
    return total > maxBytes
      ? { bytes: bytes.subarray(0, maxBytes), window: true }
      : { bytes: bytes.subarray(0, total), window: false };
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

export { lendTaskFolder, type OwnershipRecord, returnTaskFolder } from "./lending.ts";
export { forgetLend, giveBackAbandoned, lendRecorded } from "./lent-record.ts";
// The walks of a task folder (quota, snapshots, setuid sweep, lending) live in tree-walk.ts and
// lending.ts; re-exported here for the components that reach them through this file.
export {
  clearPrivilegeBits,
  MAX_WALK_ENTRIES,
  measureTaskFolder,
  showPath,
  type TreeEntry,
  type TreeUsage,
  WalkIncomplete,
  WalkLimitExceeded,
  type WalkLimits,
  walkTree,
} from "./tree-walk.ts";

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
