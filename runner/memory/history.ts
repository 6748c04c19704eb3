// The history tape of one run: append-only JSONL, one event a line, each with a sequence number.
// One writer per run. On resume the tape is cut back to the last checkpoint (see runner/run-folder/state.ts)
// so events of the interrupted phase are neither duplicated nor torn.
//
// Appends are whole or nothing: a write that fails (a full disk) is cut back to the last complete
// line and throws a RecordWriteFailed naming the file (runner/atomic-write.ts).
//
// `iteration_end` and `run_end` may carry `audit`, the audit tape's head at that moment
// (AuditTape.anchor()): `scifi audit verify` checks the tape against it (runner/audit/anchor.ts).

import { existsSync, readFileSync, statSync, truncateSync } from "node:fs";
import { visibleJson } from "../terminal-text.ts";
import { appendDurably } from "./entries.ts";
import type { HistoryEvent, HistoryRecord } from "./history-events.ts";
import { promptEvent, taskDirOf } from "./prompt-history.ts";

export class HistoryTape {
  readonly file: string;
  #seq: number;

  constructor(file: string) {
    this.file = file;
    this.#seq = readHistory(file).length;
  }

  get length(): number {
    return this.#seq;
  }

  append(event: HistoryEvent): HistoryRecord {
    const record = { seq: this.#seq + 1, time: new Date().toISOString(), ...event } as HistoryRecord;
    // One event a line for every reader: visibleJson writes U+2028, U+2029, NEL and every other
    // non-printing code point as a \u escape (JSON.stringify leaves them raw, and Python's
    // splitlines() or an editor breaks a line there); JSON.parse reads the same event back.
    appendDurably(this.file, `${visibleJson(record)}\n`);
    this.#seq++;
    return record;
  }

  /**
   * The last `count` events, for prompts: without time, seq or audit head, so two runs of the same
   * task read the same text (runner/memory/prompt-history.ts).
   */
  tail(count: number): HistoryEvent[] {
    const records = readHistory(this.file);
    const taskDir = taskDirOf(records);
    return records.slice(-count).map((record) => promptEvent(record, taskDir));
  }
}

export function readHistory(file: string): HistoryRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as HistoryRecord);
}

/** Size in bytes, for checkpoints. */
export function fileSize(file: string): number {
  return existsSync(file) ? statSync(file).size : 0;
}

/** Cut a file back to a checkpointed size; returns how many bytes were discarded. */
export function cutBack(file: string, size: number): number {
  const current = fileSize(file);
  if (current > size) truncateSync(file, size);
  return Math.max(0, current - size);
}
