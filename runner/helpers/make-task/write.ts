// Where a drafted SAM goes, and writing it without clobbering the user's files.
// A draft is for a person to read: it never lands in the daemon's inbox (which starts whatever
// appears there) unless the person says so with `--to-inbox`.
import { existsSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { homePaths } from "../../paths.ts";

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

/** The inbox `path` would land in (one of `inboxes`, links resolved on both sides), if any. */
export function inboxOf(path: string, inboxes: readonly string[]): string | undefined {
  const target = realFolder(dirname(path));
  return inboxes.find((inbox) => {
    const rel = relative(realFolder(inbox), target);
    return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !rel.startsWith(sep));
  });
}

/** Name from the draft's front matter (`name: x`), for the default file name. */
export function draftName(text: string): string {
  const match = /^name:\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)/m.exec(text);
  return match?.[1] ?? "new-task";
}

export class OutputExists extends Error {
  override name = "OutputExists";
}

export function writeDraft(path: string, text: string, force: boolean): void {
  if (existsSync(path) && !force) {
    throw new OutputExists(
      `${path} already exists; choose another file with -o, or pass --force to replace it`,
    );
  }
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
