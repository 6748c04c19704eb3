// Which calls on a run's audit tape still stand after resumes. The tape is append-only, so a run
// killed in the middle of a phase keeps that phase's calls on it; `--resume` then starts the phase
// again from its last checkpoint (the tape's `resumed` event names it: phase and iteration), and
// those calls are made again. A call stands when the checkpoint the run resumed from came after it:
// an earlier iteration, or the same iteration and a phase up to the checkpoint's. The replay answers
// from the standing calls (a replay runs the task once, without kills), and a resumed scripted run
// continues each role's queue after the replies the standing calls used.
import type { AuditRecord, CallRecord } from "../audit/types.ts";
import { PHASES } from "../run-folder/state.ts";

/** The loop's checkpoints in order: the run folder's own list, never a copy of it. */
const ORDER: readonly string[] = PHASES;
/** The checkpoint each role's calls lead to. Other roles (helpers) are not part of the loop. */
const ROLE_PHASE: Record<string, string> = {
  prescan: "prescan",
  work: "work",
  review: "review",
  tracer: "critique",
  critique: "critique",
  final_review: "final_review",
};

/** The calls that stand, in tape order. */
export function standingCalls(records: readonly AuditRecord[]): CallRecord[] {
  const kept: CallRecord[] = [];
  let segment: CallRecord[] = [];
  for (const record of records) {
    if (record.kind === "call") segment.push(record);
    else if (record.kind === "event" && record.event === "resumed") {
      const phase = String(record.data?.fromPhase ?? "");
      const iteration = Number(record.data?.iteration ?? 0);
      kept.push(...segment.filter((call) => madeBefore(call, phase, iteration)));
      segment = [];
    }
  }
  return [...kept, ...segment];
}

function madeBefore(call: CallRecord, phase: string, iteration: number): boolean {
  const role = ROLE_PHASE[call.role];
  const checkpoint = ORDER.indexOf(phase);
  if (role === undefined || checkpoint < 0) return true;
  const it = call.iteration ?? 0;
  if (it !== iteration) return it < iteration;
  return ORDER.indexOf(role) <= checkpoint;
}

/**
 * Replies of the scripted model each role used in the standing calls: one per attempt that reached
 * the server (a 429, a 500, a timeout) and one for the answer (or the error that ended the call).
 * With `model`, only calls answered by that model count: a resume with another script starts it
 * from its beginning.
 */
export function repliesUsed(records: readonly AuditRecord[], model?: string): Record<string, number> {
  const used: Record<string, number> = {};
  for (const call of standingCalls(records)) {
    if (model !== undefined && call.model !== model) continue;
    const tried = call.attempts.filter((a) => a.reason !== "budget").length;
    const ended = call.response !== undefined || call.error?.name === "ProviderError" ? 1 : 0;
    used[call.role] = (used[call.role] ?? 0) + tried + ended;
  }
  return used;
}
