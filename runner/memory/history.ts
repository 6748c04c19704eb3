// The history tape of one run: append-only JSONL, one event a line, each with a sequence number.
// One writer per run. On resume the tape is cut back to the last checkpoint (see runner/loop/state.ts)
// so events of the interrupted phase are neither duplicated nor torn.
//
// Appends are whole or nothing: a write that fails (a full disk) is cut back to the last complete
// line and throws a RecordWriteFailed naming the file (runner/atomic-write.ts).
//
// `iteration_end` and `run_end` may carry `audit`, the audit tape's head at that moment
// (AuditTape.anchor()): `scifi audit verify` checks the tape against it (runner/audit/anchor.ts).

import { existsSync, readFileSync, statSync, truncateSync } from "node:fs";
import type { AuditHead } from "../audit/types.ts";
import type { ConnectionRecord } from "../network/proxy.ts";
import { appendDurably } from "./entries.ts";
import { promptEvent, taskDirOf } from "./prompt-history.ts";

export type HistoryEvent =
  | { type: "run_start"; sam: string; sha256: string; backend: string }
  | ({
      /** One connection through the run's proxy, allowed or refused (runner/network/proxy.ts). */
      type: "network";
      sandbox: string;
    } & ConnectionRecord)
  | {
      /** The first connection through a host a person approved at run time (runner/network/approve-hosts.ts). */
      type: "approved_host_used";
      /** The approval request that added it. */
      id: string;
      rule: string;
      sandbox: string;
      host: string;
      port: number;
      address?: string;
    }
  | { type: "resumed"; fromPhase: string; iteration: number; discardedEvents: number }
  | { type: "iteration_start"; iteration: number }
  | { type: "iteration_end"; iteration: number; passed: boolean; reason?: string; audit?: AuditHead }
  | {
      type: "prescan";
      iteration: number;
      node: string;
      rank: number;
      skills: string[];
      direction: string;
      /** Skills the pre-scan added beyond the SAM's list (site policy `prescanAddsSkills`). */
      addedSkills?: string[];
    }
  | {
      /** The view of group or global memory the pre-scan got (runner/run/shared-memory.ts). */
      type: "memory_view";
      iteration: number;
      level: "group" | "global";
      ref: string;
      sha256: string;
      /** Ids of the entries it drew on (the last 50), and how many there were. */
      entries: string[];
      entryCount: number;
      items: number;
      omitted: number;
      tokens: number;
      budget: number;
      before?: string;
    }
  | { type: "direction_change"; iteration: number; from: string; to: string }
  | { type: "work_end"; iteration: number; node: string; exit: string; steps: number; toolCalls: number }
  | {
      type: "check";
      iteration: number;
      node: string;
      check: string;
      passed: boolean;
      exitCode: number;
      timedOut?: boolean;
      /** Tail of the check's output (runner/run/checks.ts caps it). Older runs wrote `detail`. */
      output?: string;
      detail?: string;
    }
  | {
      type: "verdict";
      iteration: number;
      node: string;
      passed: boolean;
      items: { id: string; pass: boolean; evidence?: string }[];
      checksPassed: boolean;
      /** The review's whole verdict (runs before these fields only have items and checksPassed). */
      findings?: string[];
      fixes?: string[];
      rankAdjustment?: number;
      blocked?: string;
    }
  | { type: "node_complete"; iteration: number; node: string }
  | {
      /** A request of the approval gate and what became of it (runner/approval/gate.ts). */
      type: "approval";
      iteration: number;
      id: string;
      action: string;
      state: "requested" | "approved" | "denied" | "timed_out";
      summary: string;
      who?: string;
      at?: string;
      note?: string;
    }
  | { type: "limit"; iteration: number; limit: string; detail: string }
  | {
      type: "tampering";
      iteration: number;
      file: string;
      expected: string;
      actual: string;
      /** What was wrong: changed content, a link, a FIFO, a missing or replaced folder. */
      problem?: string;
    }
  | { type: "asset_cleanup"; iteration: number; removed: string[] }
  | { type: "sandbox_died"; iteration: number; phase: string; deaths: number; detail: string }
  | {
      type: "deliverable_links";
      iteration: number;
      links: { path: string; target: string; problem: "outside" | "dangling" }[];
    }
  | { type: "final_review"; groupSuggestions: number; globalSuggestions: number }
  | {
      /** A SLURM job request of the agent, as the host-side broker decided it (details: runs/<id>/jobs/). */
      type: "job";
      action: string;
      decision: "allowed" | "refused" | "failed";
      jobId?: string;
      rule?: string;
      message?: string;
    }
  | {
      type: "run_end";
      outcome: "passed" | "failed" | "blocked";
      reason: string;
      /** The audit tape's head when the run ended (runs before this field have none). */
      audit?: AuditHead;
    };

export type HistoryRecord = HistoryEvent & { seq: number; time: string };

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
    appendDurably(this.file, `${JSON.stringify(record)}\n`);
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
