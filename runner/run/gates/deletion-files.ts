// The task folder as approval: [delete] sees it (deletion.ts holds the guard): its regular files
// walked without following links, a file's stat fingerprint, page writeback before a verification,
// what a rewrite changed, and the guard's two refusals of a folder it cannot watch whole.
import { closeSync, constants, type Dirent, fdatasyncSync, openSync, readdirSync, type Stats } from "node:fs";
import { join } from "node:path";
import { lstatOrUndefined } from "../../policy/host-paths.ts";
import { showPath } from "../../policy/tree-walk.ts";
import { RunEnding } from "../../run-ending.ts";

const MAX_ENTRIES = 200_000;

export class DeleteGuardTooLarge extends RunEnding {
  override name = "DeleteGuardTooLarge";
  constructor(message: string) {
    super(message, { status: "blocked", limit: "approval" });
  }
}

/** A task folder the guard cannot copy and watch whole (an unreadable folder, a name not UTF-8). */
export class DeleteGuardCannotWatch extends RunEnding {
  override name = "DeleteGuardCannotWatch";
  constructor(message: string) {
    super(message, { status: "blocked", limit: "approval" });
  }
}

export const TMPFS_MAGIC = 0x01021994;
/** A ctime this close to the verification may hide a write in the same clock tick. */
export const RACY_MS = 50;

/**
 * Writes the file's dirty pages back (links not followed; a file that cannot be opened is read as
 * it is). Its use is the side effect: writeback write-protects every shared mapping of the pages.
 */
export function flushPages(path: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    fdatasyncSync(fd);
  } catch {
    // Not a regular file we can open: the read below says what it is.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** What a later check compares to skip a re-read: inode, size, mtime and ctime (nanoseconds). */
export function fingerprint(stat: Stats): string {
  return `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
}

/**
 * What a rewrite changed, for the request: the first difference (byte, and line for text) and how
 * many start lines are no longer in the new content (text up to 4 MiB).
 */
export function diffSummary(start: Buffer, now: Buffer): string {
  let at = 0;
  const common = Math.min(start.length, now.length);
  while (at < common && start[at] === now[at]) at++;
  const isText = (b: Buffer) => b.length <= 4 * 1024 ** 2 && !b.subarray(0, 8192).includes(0);
  if (!isText(start) || !isText(now)) return `first difference at byte ${at}`;
  const line = start.subarray(0, at).toString("utf8").split("\n").length;
  const before = start.toString("utf8").split("\n");
  const after = new Set(now.toString("utf8").split("\n"));
  const gone = before.filter((l) => l !== "" && !after.has(l)).length;
  const of = before.filter((l) => l !== "").length;
  return `first difference at byte ${at} (line ${line}); ${gone} of ${of} start line(s) gone`;
}

/** Regular files of the task folder (relative), never through a link; at most MAX_ENTRIES entries. */
export function regularFiles(taskDir: string): string[] {
  const out: string[] = [];
  let seen = 0;
  const walk = (rel: string): void => {
    let entries: Dirent<Buffer>[];
    try {
      entries = readdirSync(rel ? join(taskDir, rel) : taskDir, { withFileTypes: true, encoding: "buffer" });
    } catch (e) {
      // Never skipped silently: a folder the copy cannot read would hold files nobody watches.
      throw new DeleteGuardCannotWatch(
        `approval: [delete] cannot read the folder ${JSON.stringify(rel || ".")} of the task folder (${(e as Error).message}); make it readable to the runner, or protect it with a read-only mount instead (docs/approval.md)`,
      );
    }
    for (const entry of entries) {
      if (++seen > MAX_ENTRIES) {
        throw new DeleteGuardTooLarge(
          `approval: [delete] watches at most ${MAX_ENTRIES} entries of the task folder, and it holds more`,
        );
      }
      const name = entry.name.toString("utf8");
      if (!Buffer.from(name, "utf8").equals(entry.name)) {
        // The guard's records and restores name files as text: a name that is not UTF-8 would be
        // watched under another name (or not at all). Refused before the agent starts, never skipped.
        throw new DeleteGuardCannotWatch(
          `approval: [delete] needs file names that are UTF-8, and ${showPath(Buffer.concat([Buffer.from(rel ? `${rel}/` : ""), entry.name]))} in the task folder is not; rename it (e.g. convmv -f latin1 -t utf8), or protect that data with a read-only mount instead (docs/approval.md)`,
        );
      }
      const child = rel ? `${rel}/${name}` : name;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) out.push(child);
    }
  };
  walk("");
  return out;
}

/** lstat of `rel` with every folder on the way lstat'ed too: a link or non-folder there means missing. */
export function statInTask(taskDir: string, rel: string, dirs: Map<string, boolean>): Stats | undefined {
  const parts = rel.split("/");
  let dir = "";
  for (const part of parts.slice(0, -1)) {
    dir = dir ? `${dir}/${part}` : part;
    let ok = dirs.get(dir);
    if (ok === undefined) {
      ok = lstatOrUndefined(join(taskDir, dir))?.isDirectory() === true;
      dirs.set(dir, ok);
    }
    if (!ok) return undefined;
  }
  return lstatOrUndefined(join(taskDir, rel));
}
