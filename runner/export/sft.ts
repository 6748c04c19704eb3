// Supervised fine-tuning rows in the chat format most trainers read (`{messages, tools}`, OpenAI
// style), one a line, each labelled with the run's verdict. One row per conversation (an agent
// pass's last call: its whole request and the final response) or, with `per: "call"`, one per
// taped call. `tools` are the tool schemas exactly as the model saw them in that request.
import type { CallRecord, TapeContentBlock } from "../audit/types.ts";
import type { ExportGuard } from "./guard.ts";
import type { Out } from "./sink.ts";
import type { ExportRun } from "./source.ts";
import { readVerified, type TapedCall } from "./tape-stream.ts";

export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | {
      role: "assistant";
      content: string | null;
      tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
    }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ChatTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** A call's request and its response as chat messages. */
export function chatMessages(record: CallRecord): ChatMessage[] {
  const out: ChatMessage[] = [{ role: "system", content: record.request.system }];
  for (const message of record.request.messages) out.push(...blocks(message.role, message.content));
  if (record.response) out.push(...blocks("assistant", record.response.content));
  return out;
}

export function chatTools(record: CallRecord): ChatTool[] {
  return (record.request.tools ?? []).map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.inputSchema },
  }));
}

function blocks(role: "user" | "assistant", content: TapeContentBlock[]): ChatMessage[] {
  const text = content
    .filter((b) => b.type === "text")
    .map((b) => (b as { text: string }).text)
    .join("\n");
  if (role === "assistant") {
    const uses = content.filter((b) => b.type === "tool_use");
    return [
      {
        role: "assistant",
        content: text === "" && uses.length > 0 ? null : text,
        ...(uses.length > 0
          ? {
              tool_calls: uses.map((b) => {
                const use = b as Extract<TapeContentBlock, { type: "tool_use" }>;
                return {
                  id: use.id,
                  type: "function" as const,
                  function: { name: use.name, arguments: JSON.stringify(use.input) },
                };
              }),
            }
          : {}),
      },
    ];
  }
  const out: ChatMessage[] = [];
  for (const b of content)
    if (b.type === "tool_result") out.push({ role: "tool", tool_call_id: b.toolUseId, content: b.content });
  if (text !== "") out.push({ role: "user", content: text });
  return out;
}

export interface SftOptions {
  per: "conversation" | "call";
  roles?: string[];
  key?: Buffer;
}

/** The label every row of a run carries. */
export function runLabel(run: ExportRun) {
  return {
    run_id: run.runId,
    task: run.task,
    verdict: run.verdict,
    passed: run.verdict === "passed",
    reason: run.reason,
    scripted: run.scripted,
    ...(run.trial ? { eval_id: run.trial.evalId, trial: run.trial.trialId, variant: run.trial.variant } : {}),
  };
}

/** Writes the run's rows to `out`; resolves with how many. */
export async function writeSft(
  run: ExportRun,
  guard: ExportGuard,
  out: Out,
  options: SftOptions,
): Promise<number> {
  let rows = 0;
  const label = runLabel(run);
  const open = new Map<string, TapedCall>();
  const row = (call: TapedCall) => {
    const r = call.record;
    const text = JSON.stringify({
      messages: chatMessages(r),
      tools: chatTools(r),
      label: {
        ...label,
        role: r.role,
        node: call.node,
        ...(r.iteration !== undefined ? { iteration: r.iteration } : {}),
        model: r.model,
        provider: r.provider,
        tape: { seq: r.seq, line_sha256: call.lineHash },
      },
    });
    out.write(`${guard.json(text, `run ${run.runId} call seq ${r.seq}`)}\n`);
    rows++;
  };
  const onCall = (call: TapedCall) => {
    if (options.roles && options.roles.length > 0 && !options.roles.includes(call.record.role)) return;
    if (call.record.error || !call.record.response) return; // a failed call taught nothing
    if (options.per === "call") return row(call);
    const key = `${call.node}/${call.record.role}/${call.record.iteration ?? 0}`;
    const last = open.get(key);
    if (last && !continues(last.record, call.record)) row(last);
    open.set(key, call);
  };
  await readVerified(run, {
    onCall,
    ...(options.key ? { key: options.key } : {}),
  });
  for (const call of open.values()) row(call);
  return rows;
}

/** Whether `next` carries `prev`'s conversation on (its history holds prev's request and answer). */
export function continues(prev: CallRecord, next: CallRecord): boolean {
  return (
    next.request.system === prev.request.system &&
    next.request.messages.length > prev.request.messages.length &&
    next.request.messages[prev.request.messages.length]?.role === "assistant"
  );
}
