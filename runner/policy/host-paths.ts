// Host-side access to files in a task folder that never follows a link out of it. The container can
// write into the task folder, so it can plant symlinks there; any host component that reads or writes
// task files (sandbox readFile/writeFile, result collection, reports) must go through these functions.
//
// Race-aware: every path component is opened relative to the already-opened parent directory
// (`/proc/self/fd/<dirfd>/<name>` acts as openat(2)) with O_NOFOLLOW, so a link swapped in between a
// check and the open is refused instead of followed. Linux only, like the sandboxes themselves.
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
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

/** Reads `rel` inside `taskDir` without following any symlink; refuses non-regular files. */
export function readTaskFile(taskDir: string, rel: string, shownAs = rel): Buffer {
  const { dirs, name } = splitRelative(rel, shownAs);
  const dirFd = openDirectoryChain(taskDir, dirs, false, shownAs);
  let fd: number | undefined;
  try {
    fd = openNoFollow(dirFd, name, O_RDONLY | O_NONBLOCK, shownAs);
    requireRegularFile(fd, shownAs);
    return readFileSync(fd);
  } finally {
    if (fd !== undefined) closeSync(fd);
    closeSync(dirFd);
  }
}

/** Writes `rel` inside `taskDir` (creating parent folders) without following any symlink. */
export function writeTaskFile(taskDir: string, rel: string, data: string | Buffer, shownAs = rel): void {
  const { dirs, name } = splitRelative(rel, shownAs);
  const dirFd = openDirectoryChain(taskDir, dirs, true, shownAs);
  let fd: number | undefined;
  try {
    // No O_TRUNC at open: the file is checked first (a hard link must not let us clobber its twin).
    fd = openNoFollow(dirFd, name, O_WRONLY | O_CREAT | O_NONBLOCK, shownAs, 0o644);
    const stat = requireRegularFile(fd, shownAs);
    if (stat.nlink > 1) throw new HostPathRefused(shownAs, "the file has other hard links; remove it first");
    ftruncateSync(fd, 0);
    writeFileSync(fd, data);
  } finally {
    if (fd !== undefined) closeSync(fd);
    closeSync(dirFd);
  }
}

function splitRelative(rel: string, shownAs: string): { dirs: string[]; name: string } {
  const parts = rel.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.some((p) => p === "..")) throw new HostPathRefused(shownAs, "'..' may not leave the task folder");
  const name = parts.pop();
  if (name === undefined) throw new HostPathRefused(shownAs, "this is the task folder itself, not a file");
  return { dirs: parts, name };
}

function openDirectoryChain(taskDir: string, dirs: string[], create: boolean, shownAs: string): number {
  let fd = openSync(taskDir, O_RDONLY | O_DIRECTORY);
  try {
    for (const dir of dirs) {
      const next = openDirectory(fd, dir, create, shownAs);
      closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function openDirectory(parentFd: number, name: string, create: boolean, shownAs: string): number {
  const at = `/proc/self/fd/${parentFd}/${name}`;
  try {
    return openSync(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" && create) {
      mkdirSync(at, { mode: 0o755 });
      return openSync(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
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
  return error instanceof Error ? error : new Error(String(error));
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined;
}
