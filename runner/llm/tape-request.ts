// How a neutral ModelRequest is written on the tape, shared by the gateway and the replay provider.
import type { TapeRequest } from "../audit/types.ts";
import type { ModelRequest } from "./types.ts";

/** The neutral request as it goes on the tape (meta and injected are recorded separately). */
export function tapeRequest(request: ModelRequest): TapeRequest {
  return {
    kind: request.kind,
    rank: request.rank,
    system: request.system,
    messages: request.messages,
    ...(request.tools ? { tools: request.tools } : {}),
    ...(request.workspaceContext !== undefined ? { workspaceContext: request.workspaceContext } : {}),
    ...(request.jsonSchema ? { jsonSchema: request.jsonSchema } : {}),
    ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
    ...(request.contextBudget !== undefined ? { contextBudget: request.contextBudget } : {}),
    ...(request.thinkingDropped ? { thinkingDropped: true } : {}),
  };
}
