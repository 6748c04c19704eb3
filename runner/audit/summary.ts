// Derived facts of a tape: per-call summaries, totals per role and per model, cache-read share.
// `scifi audit show/stats` and the HTML report use this one data model.
import { PrefixCache } from "./prefix-cache.ts";
import type { AuditRecord, CallRecord, EventRecord, InjectedRecord, TapeUsage } from "./types.ts";

export interface CallSummary {
  seq: number;
  time: string;
  role: string;
  iteration?: number;
  step?: number;
  provider: string;
  model: string;
  stopReason?: string;
  thinking: string[];
  text: string;
  toolCalls: {
    name: string;
    input: Record<string, unknown>;
    /** What the tool returned, from the next request that carried it (absent: never sent back). */
    result?: { content: string; isError: boolean };
  }[];
  json?: unknown;
  usage: TapeUsage;
  costUsd: number;
  latencyMs: number;
  retries: number;
  fallbacks: number;
  attempts: CallRecord["attempts"];
  error?: { name: string; message: string };
}

export interface Totals {
  calls: number;
  failedCalls: number;
  usage: TapeUsage;
  costUsd: number;
  /** Sum of call latencies (ms). */
  latencyMs: number;
  retries: number;
  fallbacks: number;
  /** cacheRead / (input + cacheWrite + cacheRead); 0 when there is no input. */
  cacheReadShare: number;
}

export interface TapeSummary {
  runId: string;
  records: number;
  calls: CallSummary[];
  injected: InjectedRecord[];
  events: EventRecord[];
  totals: Totals;
  byRole: Record<string, Totals>;
  byModel: Record<string, Totals>;
  /** First to last record time (ms). */
  wallMs: number;
}

export function summarizeTape(records: AuditRecord[]): TapeSummary {
  const callRecords = records.filter((r): r is CallRecord => r.kind === "call");
  const results = new Map<string, { content: string; isError: boolean }>();
  for (const call of callRecords)
    for (const message of call.request.messages)
      for (const block of message.content)
        if (block.type === "tool_result" && !results.has(block.toolUseId))
          results.set(block.toolUseId, { content: block.content, isError: block.isError === true });
  const calls = callRecords.map((record) => summarizeCall(record, results));
  const times = records.map((r) => Date.parse(r.time)).filter((t) => !Number.isNaN(t));
  return {
    runId: records[0]?.runId ?? "",
    records: records.length,
    calls,
    injected: records.filter((r): r is InjectedRecord => r.kind === "injected"),
    events: records.filter((r): r is EventRecord => r.kind === "event"),
    totals: totalsOf(calls),
    byRole: groupTotals(calls, (c) => c.role),
    byModel: groupTotals(calls, (c) => `${c.provider}/${c.model}`),
    wallMs: times.length > 0 ? Math.max(...times) - Math.min(...times) : 0,
  };
}

export function summarizeCall(
  record: CallRecord,
  results: ReadonlyMap<string, { content: string; isError: boolean }> = new Map(),
): CallSummary {
  const content = record.response?.content ?? [];
  return {
    seq: record.seq,
    time: record.time,
    role: record.role,
    ...(record.iteration !== undefined ? { iteration: record.iteration } : {}),
    ...(record.step !== undefined ? { step: record.step } : {}),
    provider: record.provider,
    model: record.model,
    ...(record.response ? { stopReason: record.response.stopReason } : {}),
    thinking: content.flatMap((b) => (b.type === "thinking" ? [b.thinking] : [])),
    text: content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n"),
    toolCalls: content.flatMap((b) => {
      if (b.type !== "tool_use") return [];
      const result = results.get(b.id);
      return [{ name: b.name, input: b.input, ...(result ? { result } : {}) }];
    }),
    ...(record.response?.json !== undefined ? { json: record.response.json } : {}),
    usage: record.usage,
    costUsd: record.costUsd,
    latencyMs: record.latencyMs,
    retries: record.attempts.filter((a) => a.outcome === "retry").length,
    fallbacks: record.attempts.filter((a) => a.outcome === "fallback").length,
    attempts: record.attempts,
    ...(record.error ? { error: record.error } : {}),
  };
}

export function cacheReadShare(usage: Pick<TapeUsage, "input" | "cacheWrite" | "cacheRead">): number {
  const inputSide = usage.input + usage.cacheWrite + usage.cacheRead;
  return inputSide === 0 ? 0 : usage.cacheRead / inputSide;
}

function totalsOf(calls: CallSummary[]): Totals {
  const usage: TapeUsage = { input: 0, output: 0, cacheWrite: 0, cacheRead: 0, reasoning: 0 };
  let costUsd = 0;
  let latencyMs = 0;
  let retries = 0;
  let fallbacks = 0;
  for (const call of calls) {
    usage.input += call.usage.input;
    usage.output += call.usage.output;
    usage.cacheWrite += call.usage.cacheWrite;
    usage.cacheRead += call.usage.cacheRead;
    usage.reasoning += call.usage.reasoning;
    costUsd += call.costUsd;
    latencyMs += call.latencyMs;
    retries += call.retries;
    fallbacks += call.fallbacks;
  }
  return {
    calls: calls.length,
    failedCalls: calls.filter((c) => c.error).length,
    usage,
    costUsd,
    latencyMs,
    retries,
    fallbacks,
    cacheReadShare: cacheReadShare(usage),
  };
}

function groupTotals(calls: CallSummary[], keyOf: (c: CallSummary) => string): Record<string, Totals> {
  const groups = new Map<string, CallSummary[]>();
  for (const call of calls) groups.set(keyOf(call), [...(groups.get(keyOf(call)) ?? []), call]);
  return Object.fromEntries([...groups].map(([key, group]) => [key, totalsOf(group)]));
}

/**
 * Recomputes the cache accounting of a tape's Anthropic-format calls from the wire bodies alone,
 * by prefix matching up to each request's breakpoints (independent of what the server reported).
 */
export function cacheFromWire(records: AuditRecord[]): {
  input: number;
  cacheWrite: number;
  cacheRead: number;
  share: number;
  calls: number;
} {
  const cache = new PrefixCache();
  const sum = { input: 0, cacheWrite: 0, cacheRead: 0 };
  let calls = 0;
  for (const record of records) {
    if (record.kind !== "call" || !isAnthropicWire(record.wire)) continue;
    const usage = cache.accountAnthropic(record.wire, record.model);
    sum.input += usage.input;
    sum.cacheWrite += usage.cacheWrite;
    sum.cacheRead += usage.cacheRead;
    calls++;
  }
  return { ...sum, share: cacheReadShare(sum), calls };
}

function isAnthropicWire(wire: unknown): boolean {
  const w = wire as { max_tokens?: unknown; messages?: unknown } | undefined;
  return typeof w?.max_tokens === "number" && Array.isArray(w.messages);
}
