// Resolves `<run>` of the audit commands: a run folder, a tape file, or a run id under <home>/runs.
import { existsSync, statSync } from "node:fs";
import { homePaths, runDir, runFiles } from "../paths.ts";

export class RunNotFound extends Error {
  override name = "RunNotFound";
}

export function resolveTapePath(run: string, home: string): string {
  if (existsSync(run) && statSync(run).isFile()) return run;
  if (existsSync(run) && statSync(run).isDirectory()) return mustExist(runFiles(run).audit, run, home);
  return mustExist(runFiles(runDir(home, run)).audit, run, home);
}

function mustExist(path: string, run: string, home: string): string {
  if (existsSync(path)) return path;
  throw new RunNotFound(
    `no audit tape for '${run}': looked for ${path}; pass a run folder, a tape file, or a run id under ${homePaths(home).runs}`,
  );
}
