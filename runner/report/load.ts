// Reads everything a run report needs from one run folder. Every file but the audit tape is
// optional: a run killed early, or a tape copied off the cluster on its own, still gets a report.

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { AuditRecord, VerifyResult } from "../audit/types.ts";
import { readTape, verifyTape } from "../audit/verify.ts";
import type { CritiqueRecord } from "../critique/schema.ts";
import { readHistory } from "../memory/history.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import { homePaths, runFiles, scifiHome } from "../paths.ts";
import type { SandboxSpec } from "../policy/spec.ts";
import type { RunState } from "../run-folder/state.ts";
import type { SamDocument } from "../sam/types.ts";
import { readSnapshots, type StoredSnapshots } from "./changes.ts";
import { loadCritiques } from "./critique-html.ts";

export interface RunInputs {
  runDir: string;
  /** The scifi home the run belongs to (memory and skill files are looked up there). */
  home: string;
  records: AuditRecord[];
  chain: VerifyResult;
  history: HistoryRecord[];
  state?: RunState;
  spec?: SandboxSpec;
  sam?: SamDocument;
  /** Task memory text (`memory.md`), empty when the run wrote none. */
  taskMemory: string;
  /** Why the run stopped without an outcome (`error.json`, written by the run's setup). */
  runError?: { kind: "start" | "replay" | "other"; name: string; message: string; time: string };
  /** The task-folder snapshots of the run (`changes/`), when it took them. */
  snapshots?: StoredSnapshots;
  /** The run's critique records (`critique/itN.json`) and what could not be read of them. */
  critiques?: { records: CritiqueRecord[]; problems: string[] };
}

export class ReportInputError extends Error {
  override name = "ReportInputError";
}

/** Loads a run folder; `tapePath` is its audit tape (resolved by the caller like `scifi audit`). */
export function loadRun(tapePath: string, home?: string): RunInputs {
  const runDir = dirname(tapePath);
  const files = runFiles(runDir);
  const chain = verifyTape(tapePath);
  let records: AuditRecord[];
  try {
    records = readTapeTolerant(tapePath);
  } catch (error) {
    throw new ReportInputError(`cannot read the audit tape ${tapePath}: ${(error as Error).message}`);
  }
  return {
    runDir,
    home: home ?? homeOf(runDir),
    records,
    chain,
    history: existsSync(files.history) ? readHistory(files.history) : [],
    ...optionalJson<RunState>("state", files.state),
    ...optionalJson<SandboxSpec>("spec", files.spec),
    ...optionalJson<SamDocument>("sam", files.samJson),
    taskMemory: existsSync(files.memory) ? readFileSync(files.memory, "utf8") : "",
    snapshots: readSnapshots(runDir),
    critiques: loadCritiques(runDir),
    ...optionalJson<NonNullable<RunInputs["runError"]>>("runError", join(runDir, "error.json")),
  };
}

/** `<home>/runs/<id>` -> `<home>`; a folder elsewhere falls back to SCIFI_HOME / the current folder. */
function homeOf(runDir: string): string {
  const parent = dirname(runDir);
  return basename(parent) === "runs" ? dirname(parent) : scifiHome();
}

/** A damaged line must not hide the rest: unreadable records are skipped (the chain status says so). */
function readTapeTolerant(path: string): AuditRecord[] {
  try {
    return readTape(path);
  } catch {
    return readTape(path, { tolerant: true });
  }
}

function optionalJson<T>(key: string, file: string): Record<string, T> {
  if (!existsSync(file)) return {};
  try {
    return { [key]: JSON.parse(readFileSync(file, "utf8")) as T };
  } catch (error) {
    throw new ReportInputError(
      `${file} is not valid JSON (${(error as Error).message}); restore it or delete it to report without it`,
    );
  }
}

/** Memory files of the home that a run may have written to (group and global memory). */
export function sharedMemoryFiles(home: string): string[] {
  const paths = homePaths(home);
  const groups = join(paths.memory, "groups");
  const files = [paths.globalMemory, paths.globalProposed];
  if (existsSync(groups)) {
    for (const name of readdirSync(groups).sort()) if (name.endsWith(".md")) files.push(join(groups, name));
  }
  return files.filter((f) => existsSync(f));
}
