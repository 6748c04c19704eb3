// Incremental call records: a 40-step session (scripted model, real SDKs over HTTP) is stored as
// references plus new content, readTape reconstructs every request and wire body exactly as the
// gateway sent them, the tape grows linearly, and a forged reference fails verification.
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { sealLine } from "../../runner/audit/chain.ts";
import { Redactor } from "../../runner/audit/redact.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import type { CallRecord, TapeRequest } from "../../runner/audit/types.ts";
import { readTape, verifyTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { tapeRequest } from "../../runner/llm/tape-request.ts";
import type { Message, ModelRequest } from "../../runner/llm/types.ts";
import { freshRun, request, shellTool, userText, writeScript } from "../llm/helpers.ts";

const STEPS = 40;
const SECRET = "sk-plantedSecretValue0123456789abcdef";

let models: Gateway[] = [];
afterEach(async () => {
  for (const m of models) await m.close();
  models = [];
});

/** Scripted model (labelled scripted): 39 tool calls, then done; a prescan call every 10 steps. */
function script(): string {
  const work = Array.from(
    { length: STEPS - 1 },
    (_, i) =>
      `  - text: "Step ${i + 1}."\n    tool_calls:\n      - name: shell\n        input: { command: "make check STEP=${i + 1}" }\n`,
  ).join("");
  const prescan = Array.from({ length: 4 }, (_, i) => `  - text: "Plan ${i}: keep going."\n`).join("");
  return `work:\n${work}  - text: "All checks pass."\nprescan:\n${prescan}`;
}

/** Records the wire body of every call as the provider sent it (deep copy at the time). */
function captureWire(model: Gateway): unknown[] {
  const sent: unknown[] = [];
  for (const entry of model.entries) {
    const provider = entry.provider;
    const call = provider.call.bind(provider);
    provider.call = async (req, options) => {
      const result = await call(req, options);
      sent.push(structuredClone(result.wire));
      return result;
    };
  }
  return sent;
}

async function session(
  protocol: "scripted" | "scripted-openai",
): Promise<{ tapePath: string; sent: TapeRequest[]; wires: unknown[] }> {
  const run = freshRun("incremental");
  const redactor = new Redactor({ values: [SECRET] });
  const tape = new AuditTape(run.tapePath, { runId: "incremental", redactor });
  run.tape.close();
  const model = await createModel(`${protocol}:${writeScript(script())}`, tape);
  models.push(model);
  const wires = captureWire(model);
  const sent: TapeRequest[] = [];
  const history: Message[] = [userText("Make all checks pass.")];
  const ask = async (req: ModelRequest) => {
    sent.push(redactor.value(structuredClone(tapeRequest(req))));
    return model.complete(req);
  };
  for (let step = 0; step < STEPS; step++) {
    if (step % 10 === 0) {
      await ask(
        request({
          role: "prescan",
          kind: "control",
          system: "You plan.",
          messages: [userText(`plan ${step}`)],
        }),
      );
    }
    const reply = await ask(
      request({ tools: [shellTool], messages: history, workspaceContext: `step ${step + 1} of ${STEPS}` }),
    );
    const call = reply.content.find((b) => b.type === "tool_use");
    if (call?.type !== "tool_use") break;
    history.push({ role: "assistant", content: reply.content });
    const secret = step === 5 ? ` token=${SECRET}` : "";
    history.push({
      role: "user",
      content: [
        { type: "tool_result", toolUseId: call.id, content: `${"ok ".repeat(200)}step ${step}${secret}` },
      ],
    });
  }
  tape.close();
  return { tapePath: run.tapePath, sent, wires: wires.map((w) => redactor.value(w)) };
}

function callsOf(path: string): CallRecord[] {
  return readTape(path).filter((r): r is CallRecord => r.kind === "call");
}

describe.each(["scripted", "scripted-openai"] as const)("incremental tape (%s wire format)", (protocol) => {
  it("reconstructs every request and wire body of a 40-step session exactly, from a tape that grows linearly", async () => {
    const { tapePath, sent, wires } = await session(protocol);
    expect(verifyTape(tapePath)).toMatchObject({ ok: true });
    const calls = callsOf(tapePath);
    expect(calls).toHaveLength(STEPS + 4);
    expect(calls.map((c) => c.request)).toEqual(sent);
    expect(calls.map((c) => c.wire)).toEqual(wires);
    // The planted secret was redacted where it entered, and stays redacted in every later request.
    expect(readFileSync(tapePath, "utf8")).not.toContain(SECRET);
    expect(JSON.stringify(calls.at(-1)?.request)).toContain("[REDACTED]");
    // Linear growth: the whole tape is a small multiple of the last call's full record, not ~STEPS/2.
    const lastFull = JSON.stringify(calls.at(-1)).length;
    expect(statSync(tapePath).size).toBeLessThan(3 * lastFull);
    // Later work calls store references, not the history again.
    const lines = readFileSync(tapePath, "utf8").trimEnd().split("\n");
    expect(lines.at(-1)).toMatch(/"messages":\{"\$from":\d+,"count":\d+,"add":/);
    // The wire body's copy of a long tool output is a path into the same record's request.
    expect(lines.at(-1)).toMatch(/\{"\$s":\["messages",\d+,"content",0,"content"\]\}/);
  }, 60_000);
});

describe("forged references", () => {
  /** Replaces the last line with a forged one whose own hash is recomputed (prev stays right). */
  function forgeLast(path: string, edit: (record: Record<string, unknown>) => void): void {
    const lines = readFileSync(path, "utf8").trimEnd().split("\n");
    const { hash: _hash, ...record } = JSON.parse(lines.at(-1) ?? "{}") as Record<string, unknown>;
    edit(record);
    lines[lines.length - 1] = sealLine(JSON.stringify(record));
    writeFileSync(path, `${lines.join("\n")}\n`);
  }

  async function shortTape(toolOutput = "ok"): Promise<string> {
    const run = freshRun("forged");
    const model = await createModel(`scripted:${writeScript(script())}`, run.tape);
    models.push(model);
    const history: Message[] = [userText("go")];
    for (let step = 0; step < 3; step++) {
      const reply = await model.complete(request({ tools: [shellTool], messages: history }));
      const call = reply.content.find((b) => b.type === "tool_use");
      if (call?.type !== "tool_use") break;
      history.push({ role: "assistant", content: reply.content });
      history.push({
        role: "user",
        content: [{ type: "tool_result", toolUseId: call.id, content: toolOutput }],
      });
    }
    run.tape.close();
    return run.tapePath;
  }

  type Req = { request: { messages: { $from: number; count: number } } };

  it.each([
    [
      "a forward seq",
      (r: Req) => {
        r.request.messages.$from = 7;
      },
      /seq 7, which is not before this record/,
    ],
    [
      "a seq that is no call",
      (r: Req) => {
        r.request.messages.$from = -1;
      },
      /not before|not a call/,
    ],
    [
      "more items than the call holds",
      (r: Req) => {
        r.request.messages.count = 99;
      },
      /takes 99 items from seq/,
    ],
  ])(
    "a reference to %s fails verification with its line",
    async (_what, edit, reason) => {
      const path = await shortTape();
      const before = readFileSync(path, "utf8").trimEnd().split("\n").length;
      forgeLast(path, (record) => edit(record as unknown as Req));
      expect(verifyTape(path)).toMatchObject({
        ok: false,
        line: before,
        reason: expect.stringMatching(reason),
      });
      expect(() => readTape(path)).toThrow(reason);
      expect(readTape(path, { tolerant: true })).toHaveLength(before - 1);
    },
    30_000,
  );

  it("a wire text that points to no text of its request fails verification", async () => {
    const path = await shortTape(`ok ${"x".repeat(300)}`);
    const before = readFileSync(path, "utf8").trimEnd().split("\n").length;
    forgeLast(path, (record) => {
      const text = JSON.stringify(record).replace(/"\$s":\["messages",\d+/, '"$s":["messages",99');
      Object.assign(record, JSON.parse(text));
    });
    expect(verifyTape(path)).toMatchObject({
      ok: false,
      line: before,
      reason: expect.stringMatching(/refers to request\.messages\.99\..*which is no text/),
    });
  }, 30_000);

  it("a system prompt that references its own record fails verification", async () => {
    const path = await shortTape();
    const before = readFileSync(path, "utf8").trimEnd().split("\n").length;
    forgeLast(path, (record) => {
      (record.request as { system: unknown }).system = { $same: before - 1 };
    });
    expect(verifyTape(path)).toMatchObject({
      ok: false,
      line: before,
      reason: expect.stringMatching(/bad reference/),
    });
  }, 30_000);
});
