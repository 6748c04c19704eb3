// Where a drafted SAM goes, and writing it without clobbering the user's files.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { homePaths } from "../../paths.ts";

/** `-o FILE` as given (relative to the current folder), else `tasks/<name>.md` in the home. */
export function draftPath(home: string, output: string | undefined, name: string): string {
  return output ? resolve(output) : join(homePaths(home).tasks, `${name}.md`);
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
