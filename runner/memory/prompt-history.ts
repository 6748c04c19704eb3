// What agents read of the records: the same facts, without what changes between two runs of the
// same task (so a replay reproduces every prompt, docs/models.md "Replay"). History events lose
// their wall-clock `time`, their tape `seq` and the audit tape's head (`audit`: a hash over times
// and run ids); they keep their iteration numbers. Host paths in the task folder read as the
// sandbox's `/task/...` (the folder is the root SAM's, from the run's `run_start`), and the SAM
// is named by its file name. Memory entries lose their time and run id (runner/memory/entries.ts).
import { basename, dirname } from "node:path";
import { TASK_MOUNT } from "../policy/spec.ts";
import type { HistoryEvent, HistoryRecord } from "./history-events.ts";

/** One history record as agents read it; `taskDir`: the task folder on the host, if known. */
export function promptEvent(record: HistoryRecord | HistoryEvent, taskDir?: string): HistoryEvent {
  const { seq: _seq, time: _time, ...event } = record as HistoryRecord;
  const out = { ...event } as HistoryEvent & { audit?: unknown };
  delete out.audit;
  if (out.type === "run_start") out.sam = basename(out.sam);
  return taskDir ? (inSandbox(out, taskDir) as HistoryEvent) : out;
}

/** The task folder of a run, from its history's `run_start` (the root SAM's folder). */
export function taskDirOf(records: readonly (HistoryRecord | HistoryEvent)[]): string | undefined {
  const start = records.find((r) => r.type === "run_start");
  return start?.type === "run_start" && start.sam.startsWith("/") ? dirname(start.sam) : undefined;
}

/** History records (or their JSON lines) as prompt lines, one event a line. */
export function promptHistoryLines(text: string, taskDir?: string): string {
  const parsed = text.split("\n").map((line) => {
    try {
      const value = JSON.parse(line) as unknown;
      return value && typeof value === "object" && "type" in value ? (value as HistoryRecord) : undefined;
    } catch {
      return undefined;
    }
  });
  const dir = taskDir ?? taskDirOf(parsed.filter((r): r is HistoryRecord => r !== undefined));
  return text
    .split("\n")
    .map((line, i) => {
      const record = parsed[i];
      return record ? JSON.stringify(promptEvent(record, dir)) : line;
    })
    .join("\n");
}

/** Every string with the host task folder replaced by the sandbox's `/task`. */
function inSandbox(value: unknown, taskDir: string): unknown {
  if (typeof value === "string") {
    return value === taskDir ? TASK_MOUNT : value.replaceAll(`${taskDir}/`, `${TASK_MOUNT}/`);
  }
  if (Array.isArray(value)) return value.map((v) => inSandbox(v, taskDir));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inSandbox(v, taskDir)]));
  return value;
}
