// The report's view of each model call: its tape record and summary, the tool calls it made with
// the results the agent sent back, the memory and skill texts that entered its prompt, and how much
// of its request repeats the previous call of the same conversation (the page shows only what is new).
import type { CallSummary, TapeSummary } from "../audit/summary.ts";
import type { CallRecord, InjectedRecord, TapeContentBlock } from "../audit/types.ts";
import type { RunInputs } from "./load.ts";

export interface ToolCallView {
  id: string;
  name: string;
  input: Record<string, unknown>;
  /** The result the agent sent back in its next call; absent when the pass ended with this call. */
  result?: { content: string; isError: boolean };
}

export interface CallView {
  summary: CallSummary;
  record: CallRecord;
  toolCalls: ToolCallView[];
  /** The call itself failed, or one of its tool calls returned an error. */
  failed: boolean;
  /** Memory and skill texts that entered this call's prompt (tape records just before it). */
  injected: InjectedRecord[];
  /** The earlier call of the same conversation whose request this one extends (for de-duplication). */
  previous?: { seq: number; sameSystem: boolean; sharedMessages: number; sameTools: boolean };
}

export function callViews(records: RunInputs["records"], summary: TapeSummary): CallView[] {
  const callRecords = records.filter((r): r is CallRecord => r.kind === "call");
  const results = toolResults(callRecords);
  const bySeq = new Map(summary.calls.map((c) => [c.seq, c]));
  const lastOfConversation = new Map<string, CallRecord>();
  let pendingInjected: InjectedRecord[] = [];
  const views: CallView[] = [];
  for (const record of records) {
    if (record.kind === "injected") pendingInjected.push(record);
    if (record.kind !== "call") continue;
    const summaryOfCall = bySeq.get(record.seq);
    if (!summaryOfCall) continue;
    const toolCalls = (record.response?.content ?? []).flatMap((b) =>
      b.type === "tool_use"
        ? [{ id: b.id, name: b.name, input: b.input, ...withResult(results.get(b.id)) }]
        : [],
    );
    const key = `${record.role}|${record.iteration ?? ""}`;
    const previous = lastOfConversation.get(key);
    lastOfConversation.set(key, record);
    views.push({
      summary: summaryOfCall,
      record,
      toolCalls,
      failed: Boolean(record.error) || toolCalls.some((t) => t.result?.isError),
      injected: pendingInjected.filter((i) => i.role === record.role),
      ...(previous ? { previous: overlap(previous, record) } : {}),
    });
    pendingInjected = [];
  }
  return views;
}

function withResult(result: ToolCallView["result"]): Pick<ToolCallView, "result"> {
  return result ? { result } : {};
}

/** toolUseId -> the tool_result block the agent sent back (found in later requests). */
function toolResults(calls: CallRecord[]): Map<string, { content: string; isError: boolean }> {
  const map = new Map<string, { content: string; isError: boolean }>();
  for (const call of calls)
    for (const message of call.request.messages)
      for (const block of message.content)
        if (block.type === "tool_result" && !map.has(block.toolUseId))
          map.set(block.toolUseId, { content: block.content, isError: block.isError === true });
  return map;
}

/** How much of `next`'s request repeats `prev`'s: the page shows only what is new. */
function overlap(prev: CallRecord, next: CallRecord): NonNullable<CallView["previous"]> {
  const a = prev.request.messages;
  const b = next.request.messages;
  let shared = 0;
  while (shared < a.length && shared < b.length && sameMessage(a[shared], b[shared])) shared++;
  return {
    seq: prev.seq,
    sameSystem: prev.request.system === next.request.system,
    sharedMessages: shared,
    sameTools: JSON.stringify(prev.request.tools ?? []) === JSON.stringify(next.request.tools ?? []),
  };
}

function sameMessage(
  x: { role: string; content: TapeContentBlock[] } | undefined,
  y: { role: string; content: TapeContentBlock[] } | undefined,
): boolean {
  if (x === undefined || y === undefined) return false;
  // The tape reader shares unchanged messages between calls: identity settles most comparisons.
  return x === y || (x.role === y.role && JSON.stringify(x) === JSON.stringify(y));
}
