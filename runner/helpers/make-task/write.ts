// Where a drafted SAM goes, and writing it without clobbering the user's files.
// A draft is for a person to read: it never lands in the daemon's inbox (which starts whatever
// appears there) unless the person says so with `--to-inbox`.
import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  realpathSync,
  writeSync,
} from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { writeFileAtomic } from "../../atomic-write.ts";
import { homePaths, INBOX_LOCK } from "../../paths.ts";
import { ownerAlive, readPidLock } from "../../pid-lock.ts";

export interface DraftPlace {
  /** `-o FILE` as typed. */
  output?: string | undefined;
  /** `--to-inbox`: the draft goes into the inbox (default `<home>/tasks/<name>.md`). */
  toInbox?: boolean | undefined;
  /** The current folder (the default place of a draft). */
  cwd: string;
}

/** `-o FILE` (relative to the current folder), else `<name>.md` in the current folder; `--to-inbox`: the home's inbox. */
export function draftPath(home: string, place: DraftPlace, name: string): string {
  if (place.output) return resolve(place.cwd, place.output);
  return place.toInbox ? join(homePaths(home).tasks, `${name}.md`) : join(place.cwd, `${name}.md`);
}

/** The folder as the file system has it (links resolved), for the part of the path that exists. */
function realFolder(path: string): string {
  let dir = resolve(path);
  const rest: string[] = [];
  while (!existsSync(dir)) {
    rest.unshift(basename(dir));
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return join(realpathSync(dir), ...rest);
}

/**
 * The inbox `path` would land in, if any: one of `inboxes` (links resolved on both sides), or any
 * folder above it that a daemon holds as its inbox now (its INBOX_LOCK names a live owner, or an
 * owner on another host, which cannot be checked from here), whatever home that daemon runs under.
 */
export function inboxOf(path: string, inboxes: readonly string[]): string | undefined {
  const target = realFolder(dirname(path));
  const named = inboxes.find((inbox) => {
    const rel = relative(realFolder(inbox), target);
    return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !rel.startsWith(sep));
  });
  if (named) return named;
  for (let dir = target; ; dir = dirname(dir)) {
    const owner = readPidLock(join(dir, INBOX_LOCK));
    if (owner && (ownerAlive(owner) || owner.host !== hostname())) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/** Name from the draft's front matter (`name: x`), for the default file name. */
export function draftName(text: string): string {
  const match = /^name:\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)/m.exec(text);
  return match?.[1] ?? "new-task";
}

export class OutputExists extends Error {
  override name = "OutputExists";
}

/** What is at `path` itself, links not followed (a dangling link is something too). */
function entryAt(path: string): "none" | "file" | "link" | "other" {
  try {
    const stat = lstatSync(path);
    return stat.isSymbolicLink() ? "link" : stat.isFile() ? "file" : "other";
  } catch {
    return "none";
  }
}

/**
 * Writes the draft at `path` and nowhere else: a link at that name (dangling or not) is refused,
 * since writing through it would put the draft where the link points (the daemon's inbox, say);
 * a new file is created exclusively, a replaced one (`--force`) by a rename over it.
 */
export function writeDraft(path: string, text: string, force: boolean): void {
  const there = entryAt(path);
  if (there === "link") {
    throw new OutputExists(
      `${path} is a symbolic link (to ${readlinkOrUnknown(path)}); the draft is not written through links: remove it or choose another file with -o`,
    );
  }
  if (there === "other")
    throw new OutputExists(`${path} exists and is not a regular file; choose another file with -o`);
  if (there === "file" && !force) {
    throw new OutputExists(
      `${path} already exists; choose another file with -o, or pass --force to replace it`,
    );
  }
  mkdirSync(dirname(path), { recursive: true });
  if (there === "file") {
    // A replaced draft (--force): a rename over it, the temp file created exclusively and never
    // through a link planted at its name.
    writeFileAtomic(path, text, {
      tempFile: join(dirname(path), `.${basename(path)}.${process.pid}.tmp`),
      exclusive: true,
    });
    return;
  }
  // O_EXCL with O_CREAT: fails on anything at the name, a link planted since the check included.
  const fd = openSync(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o644,
  );
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

function readlinkOrUnknown(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return "?";
  }
}
