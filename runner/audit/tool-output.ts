// Where the tape holds a tool output's full text, found by its call id (`scifi audit show --call`):
// an elided output's placeholder names its call id, never a record number, so a replay's tape,
// numbered otherwise, sends the same placeholder. The first record holding it answers: the request
// that first carried the result, or the `tool_output` event of one elided before any request did
// (written before the request that carried its placeholder, so found first).
import type { AuditRecord } from "./types.ts";

export interface FoundOutput {
  /** The record holding the text. */
  seq: number;
  /** "request": a call's request carried it; "tool_output": recorded on its own before elision. */
  where: "request" | "tool_output";
  role: string;
  iteration?: number;
  step?: number;
  text: string;
  isError?: boolean;
}

/** The first record holding the result of tool call `callId` (records as readTape gives them). */
export function findToolOutput(records: readonly AuditRecord[], callId: string): FoundOutput | undefined {
  for (const record of records) {
    if (record.kind === "event") {
      const data = record.data;
      if (record.event !== "tool_output" || data?.callId !== callId || typeof data.text !== "string")
        continue;
      return {
        seq: record.seq,
        where: "tool_output",
        role: String(data.role),
        ...(typeof data.iteration === "number" ? { iteration: data.iteration } : {}),
        ...(typeof data.step === "number" ? { step: data.step } : {}),
        text: data.text,
      };
    }
    if (record.kind !== "call") continue;
    for (const message of record.request.messages)
      for (const block of message.content)
        if (block.type === "tool_result" && block.toolUseId === callId)
          return {
            seq: record.seq,
            where: "request",
            role: record.role,
            ...(record.iteration !== undefined ? { iteration: record.iteration } : {}),
            ...(record.step !== undefined ? { step: record.step } : {}),
            text: block.content,
            ...(block.isError ? { isError: true } : {}),
          };
  }
  return undefined;
}
