// Shared bits of the LLM tests. Everything scripted is labelled scripted; the SDKs are real and
// talk HTTP to the scripted server.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuditTape } from "../../runner/audit/tape.ts";
import type { CallRecord } from "../../runner/audit/types.ts";
import { readTape } from "../../runner/audit/verify.ts";
import type { ModelRequest, ToolSpec } from "../../runner/llm/types.ts";

export const FIXTURES = join(import.meta.dirname, "..", "fixtures", "scripts");

export function fixture(name: string): string {
  return join(FIXTURES, name);
}

/** A fresh run folder with an open tape. */
export function freshRun(runId = "test-run"): { dir: string; tape: AuditTape; tapePath: string } {
  const dir = mkdtempSync(join(tmpdir(), "scifi-llm-"));
  const tapePath = join(dir, "audit.jsonl");
  return { dir, tape: new AuditTape(tapePath, { runId }), tapePath };
}

/** Writes a script into a temp file (for tests that need a script per case). */
export function writeScript(text: string, name = "script.yaml"): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-script-"));
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

export const shellTool: ToolSpec = {
  name: "shell",
  description: "Run a shell command in the sandbox.",
  inputSchema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
};

export function request(partial: Partial<ModelRequest> & Pick<ModelRequest, "messages">): ModelRequest {
  return {
    role: "work",
    kind: "work",
    rank: 1,
    system: "You are a careful research assistant.",
    meta: { runId: "test-run" },
    ...partial,
  };
}

export function userText(text: string) {
  return { role: "user" as const, content: [{ type: "text" as const, text }] };
}

export function calls(tapePath: string): CallRecord[] {
  return readTape(tapePath).filter((r): r is CallRecord => r.kind === "call");
}
