// What the last run of a task folder captured as its pristine SAM files and check assets, kept in
// the home (.scifi/last-assets/, out of the agent's reach), one small file per task folder. A new run of the
// folder compares what it captures with it, so a person can tell their own edit of an asset from
// something an earlier run left behind (trust rule 10).
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeJsonAtomic } from "../../atomic-write.ts";
import { homePaths } from "../../paths.ts";
import type { PristineSet } from "../../run-folder/state.ts";
import { sha256 } from "../../sha256.ts";

interface LastAssets {
  runId: string;
  taskDir: string;
  files: Record<string, string>;
}

/** Files that changed since the last run of `taskDir` (none on its first run); records this run's. */
export function assetsSinceLastRun(
  home: string,
  taskDir: string,
  runId: string,
  pristine: PristineSet,
): { since: string; files: { rel: string; was: string; now: string }[] } | undefined {
  const dir = homePaths(home).lastAssets;
  const file = join(dir, `${sha256(taskDir).slice(0, 32)}.json`);
  const now = Object.fromEntries(pristine.files.map((f) => [f.rel, f.sha256]));
  let last: LastAssets | undefined;
  try {
    if (existsSync(file)) last = JSON.parse(readFileSync(file, "utf8")) as LastAssets;
  } catch {
    last = undefined; // unreadable: as if there were no earlier run
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeJsonAtomic(file, { runId, taskDir, files: now } satisfies LastAssets, { mode: 0o600 });
  if (!last || last.taskDir !== taskDir) return undefined;
  const files = [...new Set([...Object.keys(last.files), ...Object.keys(now)])]
    .filter((rel) => last.files[rel] !== now[rel])
    .map((rel) => ({ rel, was: last.files[rel] ?? "(none)", now: now[rel] ?? "(none)" }));
  return files.length > 0 ? { since: last.runId, files } : undefined;
}
