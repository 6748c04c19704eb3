// What agents read of the records: the same facts, without what changes between two runs of the
// same task (so a replay reproduces every prompt, docs/models.md "Replay"). History events lose
// their wall-clock `time`, their tape `seq` and the audit tape's head (`audit`: a hash over times
// and run ids); they keep their iteration numbers. The SAM is named by its file name, not by its
// host path. Memory entries lose their time and run id: agents read title, author role and body.
import { basename } from "node:path";
import type { HistoryEvent, HistoryRecord } from "./history.ts";

/** One history record as agents read it. */
export function promptEvent(record: HistoryRecord | HistoryEvent): HistoryEvent {
  const { seq: _seq, time: _time, ...event } = record as HistoryRecord;
  const out = { ...event } as HistoryEvent & { audit?: unknown };
  delete out.audit;
  if (out.type === "run_start") out.sam = basename(out.sam);
  return out;
}

/** History records (or their JSON lines) as prompt lines, one event a line. */
export function promptHistoryLines(text: string): string {
  return text
    .split("\n")
    .map((line) => {
      if (line.trim() === "") return line;
      try {
        const value = JSON.parse(line) as unknown;
        if (!value || typeof value !== "object" || !("type" in value)) return line;
        return JSON.stringify(promptEvent(value as HistoryRecord));
      } catch {
        return line;
      }
    })
    .join("\n");
}
