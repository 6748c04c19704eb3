// A host-side step that fails on what the agent left in the task folder (a folder chain deeper
// than PATH_MAX, a root it chmod'ed to 000, names getfacl cannot print) is the task's failure, not
// the infrastructure's (AE-8b): the run ends failed, naming the step's error, instead of crashing
// without an outcome, which `scifi eval` would count as an `error` in no pass rate and run again
// under --retry-errors. Told apart from the infrastructure by where it failed: a path in the task
// folder or its checks copy. The host running out of something (space, memory, descriptors) stays
// the infrastructure's.
import { relative } from "node:path";
import { RunEnding } from "../../run-ending.ts";
import { visible } from "../../terminal-text.ts";

/** The run ends failed: the runner could not handle the task folder as the agent left it. */
export class TaskFolderUnusable extends RunEnding {
  override name = "TaskFolderUnusable";
  constructor(message: string) {
    super(message, { status: "failed", limit: "task_folder", prefix: "task folder" });
  }
}

/** What the host lacking something raises: never blamed on the task folder's content. */
const HOST_CODES = new Set(["ENOSPC", "EIO", "ENOMEM", "EMFILE", "ENFILE", "EAGAIN", "EBUSY", "EROFS"]);

/** Longest path and message shown (a 2,100-deep chain is kilobytes long). */
const SHOWN = 240;

/**
 * `error` as a TaskFolderUnusable when a step failed on a path inside one of `folders` (the task
 * folder, the checks' copy of it): an errno error whose path is there, or a helper program (getfacl,
 * setfacl) that named it; undefined for anything else, which stays what it was.
 */
export function taskFolderProblem(
  error: unknown,
  folders: readonly string[],
): TaskFolderUnusable | undefined {
  if (!(error instanceof Error) || error instanceof RunEnding) return undefined;
  // The step's own error may be wrapped (a SandboxError around the lending's getfacl): its causes.
  let cause: unknown = error;
  for (let depth = 0; cause instanceof Error && depth < 8; depth++) {
    const found = problemOf(cause, folders);
    if (found) return found;
    cause = cause.cause;
  }
  return undefined;
}

function problemOf(error: Error, folders: readonly string[]): TaskFolderUnusable | undefined {
  const e = error as Error & {
    code?: unknown;
    path?: unknown;
    dest?: unknown;
    cmd?: unknown;
    stderr?: unknown;
  };
  if (typeof e.code === "string" && HOST_CODES.has(e.code)) return undefined;
  const inside = (p: string) => folders.find((f) => p === f || p.startsWith(`${f}/`));
  const paths = [e.path, e.dest].filter((p): p is string => typeof p === "string");
  const errnoHit = typeof e.code === "string" ? paths.map(inside).find((f) => f !== undefined) : undefined;
  const stderr = Buffer.isBuffer(e.stderr) ? e.stderr.toString("latin1") : String(e.stderr ?? "");
  const tool =
    typeof e.cmd === "string" ? folders.find((f) => stderr.includes(f) || e.message.includes(f)) : undefined;
  const folder = errnoHit ?? tool;
  if (folder === undefined) return undefined;
  const where = paths.find((p) => inside(p));
  const shownPath = where ? ` at ${cut(relative(folder, where) || ".")}` : "";
  const what = typeof e.code === "string" ? e.code : "a helper program failed";
  return new TaskFolderUnusable(
    `the runner could not handle the task folder as the agent left it (${what}${shownPath}): ${cut(firstLine(stderr) || e.message)}. The agent's changes made it unusable, so the run ends failed; look at what the last commands did to the folder`,
  );
}

function firstLine(text: string): string {
  return (
    text
      .split("\n")
      .find((l) => l.trim() !== "")
      ?.trim() ?? ""
  );
}

function cut(text: string): string {
  const shown = visible(text);
  return shown.length > SHOWN ? `${shown.slice(0, SHOWN)}…` : shown;
}
