// a41e (attacker on issue 41's fixes): `scifi audit show RUN --call ID` answers with another pass's
// output when a server reuses its ids across passes.
//
// The promise (docs/loop.md "Context budget, compaction and recall", point 8 and point 1): "Tool
// call ids unique in the pass. Some OpenAI-compatible servers reuse their ids (Kimi's `emit:0` at
// every step, `call_0`)"; an elided output's placeholder says "The full text is on the audit tape
// in the request that first sent it (scifi audit show RUN --call "ID")", and `audit show --call`
// "prints the record that holds the full text".
//
// What happened: ids are made unique per pass only (conversation.ts uniqueIds gets a fresh `seen`
// set each pass), and findToolOutput (runner/audit/tool-output.ts) returns the first record of the
// whole tape holding that id. Under such a server, the first call of every pass is `call_0` (or
// `emit:0`): iteration 2's placeholder for its own `call_0` sends a person (or an auditor, or
// export) to iteration 1's output, a different command's text, with no warning. The same for the
// review pass's `call_0` and the work pass's.
//
// Suggested fix: make ids unique in the run (a seen set kept by the session across passes, the
// iteration or pass appended as the step is; a replay makes the same), or have the placeholder name
// the role and iteration too (`--call ID --iteration N --role work`) and findToolOutput match them;
// and have `audit show --call` say when more than one record holds the id.
import { describe, expect, it } from "vitest";
import { findToolOutput } from "../../runner/audit/tool-output.ts";
import type { AuditRecord } from "../../runner/audit/types.ts";
import type { ContentBlock } from "../../runner/llm/types.ts";
import { uniqueIds } from "../../runner/run/session/conversation.ts";

/** One pass's first reply, as a server that numbers its calls from 0 in each response sends it. */
function firstCallOfPass(): string {
  const reply: ContentBlock[] = [{ type: "tool_use", id: "call_0", name: "bash", input: { command: "ls" } }];
  const [block] = uniqueIds(reply, new Set<string>(), 1);
  return block?.type === "tool_use" ? block.id : "";
}

/** A call record whose request carried one tool result (the shape readTape gives). */
function carried(seq: number, iteration: number, callId: string, text: string): AuditRecord {
  return {
    kind: "call",
    seq,
    role: "work",
    iteration,
    step: 2,
    request: {
      messages: [
        { role: "user", content: [{ type: "text", text: "brief" }] },
        { role: "assistant", content: [{ type: "tool_use", id: callId, name: "bash", input: {} }] },
        { role: "user", content: [{ type: "tool_result", toolUseId: callId, content: text }] },
      ],
    },
  } as unknown as AuditRecord;
}

describe("a41e: a placeholder's --call names its own pass's output", () => {
  it("iteration 2's call_0 is not answered with iteration 1's output", () => {
    const first = firstCallOfPass();
    const second = firstCallOfPass();
    const records = [carried(3, 1, first, "ITERATION 1 OUTPUT"), carried(9, 2, second, "ITERATION 2 OUTPUT")];
    // Iteration 2's placeholder names `second`: the person must get iteration 2's text.
    const found = findToolOutput(records, second);
    expect(found?.iteration).toBe(2);
    expect(found?.text).toBe("ITERATION 2 OUTPUT");
  });
});
