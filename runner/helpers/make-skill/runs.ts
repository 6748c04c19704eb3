// Reading the records of finished runs for the skill maker: task memory, history tail, the SAM.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { homePaths, runFiles } from "../../paths.ts";

export interface RunRecord {
  id: string;
  dir: string;
  sam?: string;
  memory?: string;
  history?: string;
}

/** Characters kept per file: the end of a long memory or history is the most informative part. */
const MAX_CHARS = 24_000;

export class RunNotFound extends Error {
  override name = "RunNotFound";
}

/** A run given as a folder path or as a run id under the home's runs/. */
export function resolveRun(home: string, ref: string): string {
  if (existsSync(ref) && statSync(ref).isDirectory()) return resolve(ref);
  const byId = join(homePaths(home).runs, ref);
  if (existsSync(byId)) return byId;
  const recent = listRuns(home).slice(0, 5);
  throw new RunNotFound(
    `no run '${ref}' (neither a folder nor in ${homePaths(home).runs})${recent.length > 0 ? `; recent runs: ${recent.join(", ")}` : ""}`,
  );
}

function listRuns(home: string): string[] {
  try {
    return readdirSync(homePaths(home).runs).sort().reverse();
  } catch {
    return [];
  }
}

function tail(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, "utf8");
  return text.length <= MAX_CHARS
    ? text
    : `[... ${text.length - MAX_CHARS} earlier characters left out ...]\n${text.slice(-MAX_CHARS)}`;
}

export function readRun(dir: string): RunRecord {
  const files = runFiles(dir);
  const record: RunRecord = { id: dir.split("/").filter(Boolean).at(-1) ?? dir, dir };
  const sam = tail(files.sam);
  const memory = tail(files.memory);
  const history = tail(files.history);
  if (sam !== undefined) record.sam = sam;
  if (memory !== undefined) record.memory = memory;
  if (history !== undefined) record.history = history;
  if (memory === undefined && history === undefined) {
    throw new RunNotFound(`${dir} has neither memory.md nor history.jsonl; is it a run folder?`);
  }
  return record;
}

export function renderRuns(runs: readonly RunRecord[]): string {
  return runs
    .map((r) =>
      [
        `## Run ${r.id}`,
        r.sam ? `### Task (SAM)\n\n${r.sam.trim()}` : "",
        r.memory ? `### Task memory\n\n${r.memory.trim()}` : "### Task memory\n\n(none)",
        r.history
          ? `### History tape\n\n\`\`\`jsonl\n${r.history.trim()}\n\`\`\``
          : "### History tape\n\n(none)",
      ]
        .filter(Boolean)
        .join("\n\n"),
    )
    .join("\n\n");
}
