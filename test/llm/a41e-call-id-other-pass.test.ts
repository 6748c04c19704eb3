// a41e (attacker on issue 41's fixes): `scifi audit show RUN --call ID` answers with another pass's
// output when a server reuses its ids across passes. Fixed (fix41-ids): ids are unique in the run:
// the gateway keeps the run's used ids (read from the tape once, so a resumed run's too) and an id
// already used gets its pass and step appended (runner/llm/tool-ids.ts scopeIds: iteration 2's
// `call_0` at step 1 of the work pass is `call_0-w2-1`) before the reply is recorded; a replay reads
// the recorded ids back, new to it, and keeps them. The test now scopes each pass's reply with one
// run-wide set as the gateway does (it called the per-pass uniqueIds, now gone).
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
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { AuditTape } from "../../runner/audit/tape.ts";
import { findToolOutput } from "../../runner/audit/tool-output.ts";
import type { AuditRecord } from "../../runner/audit/types.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import { Gateway } from "../../runner/llm/gateway.ts";
import { OpenAIProvider } from "../../runner/llm/providers/openai.ts";
import { idScope, scopeIds } from "../../runner/llm/tool-ids.ts";
import type { ContentBlock } from "../../runner/llm/types.ts";
import { passOn } from "../attack/a41c-pass.ts";
import { freshRun } from "./helpers.ts";

/** One pass's first reply, as a server that numbers its calls from 0 in each response sends it. */
function firstCallOfPass(iteration: number, run: Set<string>): string {
  const reply: ContentBlock[] = [{ type: "tool_use", id: "call_0", name: "bash", input: { command: "ls" } }];
  const [block] = scopeIds(reply, idScope("work", iteration, 1), run);
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
    const run = new Set<string>();
    const first = firstCallOfPass(1, run);
    const second = firstCallOfPass(2, run);
    const records = [carried(3, 1, first, "ITERATION 1 OUTPUT"), carried(9, 2, second, "ITERATION 2 OUTPUT")];
    // Iteration 2's placeholder names `second`: the person must get iteration 2's text.
    const found = findToolOutput(records, second);
    expect(found?.iteration).toBe(2);
    expect(found?.text).toBe("ITERATION 2 OUTPUT");
    expect(findToolOutput(records, first)?.text).toBe("ITERATION 1 OUTPUT");
  });
});

/** A scripted stand-in (labelled scripted) for a server that names every call `call_0`: each pass
 * is one emit, then report_done. */
function callZero(): Promise<string> {
  let asked = 0;
  const listening = createServer(async (req: IncomingMessage, res) => {
    for await (const _ of req);
    asked++;
    const [name, input] =
      asked % 2 === 1
        ? ["emit", { chars: 100, tag: `pass-${(asked + 1) / 2}` }]
        : ["report_done", { claim: "done", summary: "s" }];
    const message = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_0", type: "function", function: { name, arguments: JSON.stringify(input) } }],
    };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${asked}`,
        object: "chat.completion",
        created: 0,
        model: "call-zero",
        choices: [{ index: 0, message, finish_reason: "tool_calls" }],
        usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
      }),
    );
  });
  server = listening;
  return new Promise((resolve) =>
    listening.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(listening.address() as AddressInfo).port}/v1`),
    ),
  );
}

let server: Server | undefined;
const gateways: Gateway[] = [];
afterEach(async () => {
  for (const g of gateways.splice(0)) await g.close();
  server?.close();
});

function callZeroGateway(baseURL: string, tape: AuditTape): Gateway {
  const gateway = new Gateway(
    [
      {
        name: "call-zero",
        provider: new OpenAIProvider({ name: "call-zero", model: "call-zero", apiKey: "k", baseURL }),
        rank: "any",
        kinds: ["work", "control"],
        prices: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextBudget: () => 8000,
      },
    ],
    { audit: tape, retry: { maxRetries: 0 } },
  );
  gateways.push(gateway);
  return gateway;
}

describe("a41e: ids unique in the run, over passes and a resumed process, and a replay keeps them", () => {
  it("three passes of `call_0`, the third after a restart: six ids, each pass's --call finds its own output", async () => {
    const baseURL = await callZero();
    const run = freshRun("a41e-run");
    const first = callZeroGateway(baseURL, run.tape);
    for (let pass = 0; pass < 2; pass++) expect((await passOn(first, run)).error?.message).toBeUndefined();
    await first.close();
    // A resumed run: a new process, a new gateway on the same tape.
    const resumed = { ...run, tape: new AuditTape(run.tapePath, { runId: "a41e-run" }) };
    const last = await passOn(callZeroGateway(baseURL, resumed.tape), resumed);
    expect(last.error?.message).toBeUndefined();
    const tape = readTape(run.tapePath);
    const ids = tape.flatMap((r) =>
      r.kind === "call"
        ? (r.response?.content ?? []).flatMap((b) => (b.type === "tool_use" ? [b.id] : []))
        : [],
    );
    expect(ids).toHaveLength(6);
    expect(new Set(ids).size).toBe(6);
    // Each pass's emit id (calls 1, 3, 5) finds that pass's output.
    for (const [k, pass] of [1, 2, 3].entries())
      expect(findToolOutput(tape, ids[2 * k] ?? "")?.text).toMatch(new RegExp(`^pass-${pass}: `));
    // A replay (the recorded ids read back) sends the same requests.
    const again = freshRun("a41e-replay");
    const replay = (await createModel(`replay:${run.dir}`, again.tape)) as Gateway;
    gateways.push(replay);
    for (let pass = 0; pass < 3; pass++) expect((await passOn(replay, again)).error?.message).toBeUndefined();
    await replay.close();
    gateways.pop();
    const end = readTape(again.tapePath).find((r) => r.kind === "event" && r.event === "replay_end");
    expect(end).toMatchObject({ data: { unused: 0 } });
  });
});
