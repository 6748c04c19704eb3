// Replay: a run recorded through the scripted model is answered again from its tape; the same
// requests reproduce the same answers, a changed request stops at once with a diff.

import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AuditTape } from "../../runner/audit/tape.ts";
import { readTape, verifyTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import type { Message, ModelRequest, ModelResponse } from "../../runner/llm/types.ts";
import { calls, fixture, freshRun, request, shellTool, userText } from "./helpers.ts";

let models: Gateway[] = [];
afterEach(async () => {
  for (const m of models) await m.close();
  models = [];
});

/** A tiny deterministic agent: feeds each tool call a fixed result until the model stops. */
async function session(
  model: Gateway,
  lastToolResult = "energy, momentum\n1.0, 2.0",
): Promise<ModelResponse[]> {
  const history: Message[] = [userText("Which columns does data/run1.csv have?")];
  const replies: ModelResponse[] = [];
  const results = ["run1.csv\nrun2.csv", lastToolResult];
  for (let step = 0; step < 3; step++) {
    const ask: ModelRequest = request({
      tools: [shellTool],
      messages: history,
      workspaceContext: `step ${step + 1}`,
    });
    const reply = await model.complete(ask);
    replies.push(reply);
    const call = reply.content.find((b) => b.type === "tool_use");
    if (call?.type !== "tool_use") break;
    history.push({ role: "assistant", content: reply.content });
    history.push({
      role: "user",
      content: [{ type: "tool_result", toolUseId: call.id, content: results[step] ?? "" }],
    });
  }
  return replies;
}

describe("replay provider", () => {
  it("reproduces a recorded run exactly", async () => {
    const recorded = freshRun("recorded");
    const original = await createModel(`scripted:${fixture("sdk.yaml")}`, recorded.tape);
    models.push(original);
    const first = await session(original);

    const again = freshRun("replayed");
    const replay = await createModel(`replay:${recorded.dir}`, again.tape);
    models.push(replay);
    const second = await session(replay);

    expect(second.map((r) => r.content)).toEqual(first.map((r) => r.content));
    expect(second.map((r) => r.usage)).toEqual(first.map((r) => r.usage));
    expect(second.every((r) => r.provider === "replay")).toBe(true);
    expect(calls(again.tapePath).map((c) => c.request)).toEqual(
      calls(recorded.tapePath).map((c) => c.request),
    );
    expect(verifyTape(again.tapePath).ok).toBe(true);
  });

  it("stops at the first divergence with its JSON path and 80 characters around it", async () => {
    const recorded = freshRun("recorded");
    const original = await createModel(`scripted:${fixture("sdk.yaml")}`, recorded.tape);
    models.push(original);
    await session(original);

    const replay = await createModel(`replay:${recorded.dir}`, freshRun("replayed").tape);
    models.push(replay);
    const error = await session(replay, "energy, momentum, charge\n1.0, 2.0, -1").catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(
      /^replay: call 3 \(work\) diverges from the recorded call \(seq 2 of .*audit\.jsonl\)\n/,
    );
    expect(message).toContain(
      "first difference at $.request.messages[4].content[0].content, character 16\n" +
        '  recorded: "energy, momentum\\n1.0, 2.0"\n' +
        '  now:      "energy, momentum, charge\\n1.0, 2.0, -1"',
    );
  });

  it("reads shared memory as the recorded run did: entries written since it started are left out", async () => {
    const recorded = freshRun("recorded");
    const original = await createModel(`scripted:${fixture("sdk.yaml")}`, recorded.tape);
    models.push(original);
    await session(original);
    const replay = await createModel(`replay:${recorded.dir}`, freshRun("replayed").tape);
    models.push(replay);
    const started = readTape(recorded.tapePath)[0]?.time ?? "";
    expect(replay.memoryAsOf).toBe(started);
    const { appendEntry, readMemory } = await import("../../runner/memory/entries.ts");
    const file = join(recorded.dir, "group.md");
    const entry = (id: string, time: string, title: string) =>
      appendEntry(file, { id, time, runId: id, role: "final_review", title, body: `- ${title}` });
    await entry(
      "older-run",
      new Date(Date.parse(started) - 60_000).toISOString(),
      "seen by the recorded run",
    );
    await entry("recorded", new Date(Date.parse(started) + 60_000).toISOString(), "written at its end");
    expect(readMemory(file, { before: replay.memoryAsOf })).toBe(
      "### seen by the recorded run\n_final_review_\n\n- seen by the recorded run\n\n",
    );
    expect(readMemory(file)).toContain("written at its end");
    expect(readMemory(file)).not.toContain(started.slice(0, 10));
  });

  it("refuses a tampered tape and a run without one", async () => {
    const recorded = freshRun("recorded");
    const original = await createModel(`scripted:${fixture("sdk.yaml")}`, recorded.tape);
    models.push(original);
    await session(original);
    const { readFileSync, writeFileSync } = await import("node:fs");
    writeFileSync(
      recorded.tapePath,
      readFileSync(recorded.tapePath, "utf8").replace("ls data", "rm -rf data"),
    );
    await expect(
      createModel(`replay:${recorded.dir}`, new AuditTape(`${recorded.dir}/x.jsonl`, { runId: "x" })),
    ).rejects.toThrow(/damaged at line 1 \(hash does not match/);
    await expect(createModel("replay:/nonexistent/run", freshRun().tape)).rejects.toThrow(
      /no run folder \/nonexistent\/run/,
    );
    const { mkdtempSync } = await import("node:fs");
    const empty = mkdtempSync(`${recorded.dir}-empty`);
    await expect(createModel(`replay:${empty}`, freshRun().tape)).rejects.toThrow(/no audit tape at/);
  });
});
