// What a trial is judged with is the whole task folder, not only its SAM: check assets, hidden
// references, sub-SAM files, data. The plan records every entry of each task folder (a file by its
// SHA-256 and permission bits, a link by its target, a folder as such), so a resume refuses a folder that changed since
// the eval started, and each trial compares its fresh copy with the plan before its run starts (a
// folder changed while the eval runs makes that trial an `error` naming the file, never a trial
// judged by other checks than its siblings). The walk follows no link and reads names as bytes
// (policy/tree-walk.ts): a hostile folder hides nothing from it.

import { readlinkSync } from "node:fs";
import { walkTree } from "../policy/tree-walk.ts";
import { fileSha256 } from "../sha256.ts";

/** Shown relative path -> `file <mode> <sha256>`, `link <target>`, `dir`, or `other` (a device, a socket). */
export type TaskFiles = Record<string, string>;

/** Every entry below `dir` (the root itself excluded), in a stable form. */
export async function taskFiles(dir: string): Promise<TaskFiles> {
  const files: TaskFiles = {};
  await walkTree(
    dir,
    (entry) => {
      if (entry.depth === 0) return undefined;
      const { stat } = entry;
      if (stat.isDirectory()) files[entry.rel] = "dir";
      else if (stat.isSymbolicLink())
        files[entry.rel] = `link ${readlinkSync(entry.at, "buffer").toString("hex")}`;
      // The permission bits count: a check script that lost its x bit judges otherwise.
      else if (stat.isFile())
        files[entry.rel] = `file ${(stat.mode & 0o777).toString(8)} ${fileSha256(entry.at)}`;
      else files[entry.rel] = "other";
      return undefined;
    },
    { maxEntries: Number.POSITIVE_INFINITY },
  );
  return files;
}

/**
 * The first difference between what the plan recorded and what is there now, in words
 * (`checks/want.txt changed`, `x is new`, `y is gone`); undefined when they are the same.
 */
export function firstDifference(planned: TaskFiles, now: TaskFiles): string | undefined {
  for (const name of Object.keys(planned).sort()) {
    const was = planned[name] as string;
    const is = now[name];
    if (is === undefined) return `${name} is gone`;
    if (is !== was) return `${name} changed (${kindOf(was)} then, ${kindOf(is)} now)`;
  }
  for (const name of Object.keys(now).sort()) if (!(name in planned)) return `${name} is new`;
  return undefined;
}

function kindOf(entry: string): string {
  if (entry.startsWith("file ")) {
    const [, mode, hash] = entry.split(" ");
    return `a file of mode ${mode} with SHA-256 ${hash?.slice(0, 12)}...`;
  }
  if (entry.startsWith("link ")) return "a link";
  return entry === "dir" ? "a folder" : "something else";
}

/**
 * What a trial's copy must hold: the planned folder with the other description levels removed
 * and the trial's level renamed to task.md (runner/eval/trial.ts freshCopy).
 */
export function expectedCopy(planned: TaskFiles, variantFile: string | undefined): TaskFiles {
  const out: TaskFiles = {};
  for (const [name, entry] of Object.entries(planned))
    if (!/^task\.[^./]+\.md$/.test(name)) out[name] = entry;
  // The default variant is the folder's own task.md; a named one is renamed over it.
  const chosen = planned[variantFile ?? "task.md"];
  if (chosen !== undefined) out["task.md"] = chosen;
  return out;
}
