// The derived facts of a tape (audit show/stats and the HTML report share them): totals per role
// and model, cache-read share from reported usage and recomputed from the wire bodies alone.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { cacheFromWire, summarizeTape } from "../../runner/audit/summary.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Message } from "../../runner/llm/types.ts";
import { fixture, freshRun, request, shellTool, userText } from "../llm/helpers.ts";

async function recordedRun() {
  const run = freshRun("sum-run");
  const model = await createModel(`scripted:${fixture("sdk.yaml")}`, run.tape);
  const history: Message[] = [userText("Which columns?")];
  const results = ["run1.csv", "energy, momentum"];
  for (let step = 0; step < 3; step++) {
    const reply = await model.complete(
      request({
        tools: [shellTool],
        messages: history,
        workspaceContext: `step ${step}`,
        meta: { runId: "sum-run", iteration: 1, step },
      }),
    );
    const call = reply.content.find((b) => b.type === "tool_use");
    if (call?.type !== "tool_use") break;
    history.push({ role: "assistant", content: reply.content });
    history.push({
      role: "user",
      content: [{ type: "tool_result", toolUseId: call.id, content: results[step] ?? "" }],
    });
  }
  await model.complete(
    request({
      role: "review",
      kind: "control",
      messages: [userText("Expectation: columns reported")],
      injected: [{ kind: "memory", ref: "memory/global.md#3", sha256: "a".repeat(64) }],
    }),
  );
  await model.close();
  return run;
}

describe("tape summary", () => {
  it("totals per role and model, and the cache share recomputed from the wire matches the reported one", async () => {
    const run = await recordedRun();
    const records = readTape(run.tapePath);
    const summary = summarizeTape(records);
    expect(summary.calls).toHaveLength(4);
    expect(Object.keys(summary.byRole)).toEqual(["work", "review"]);
    expect(summary.byRole.work?.calls).toBe(3);
    expect(summary.injected).toMatchObject([{ source: "memory", ref: "memory/global.md#3", role: "review" }]);
    expect(summary.calls[0]).toMatchObject({ iteration: 1, step: 0, toolCalls: [{ name: "shell" }] });
    const wire = cacheFromWire(records);
    const u = summary.totals.usage;
    expect(wire).toMatchObject({
      input: u.input,
      cacheWrite: u.cacheWrite,
      cacheRead: u.cacheRead,
      calls: 4,
    });
    expect(summary.totals.cacheReadShare).toBeCloseTo(
      u.cacheRead / (u.input + u.cacheWrite + u.cacheRead),
      12,
    );
  });

  it("scifi audit show and stats print the transcript and totals", async () => {
    const run = await recordedRun();
    const bin = join(import.meta.dirname, "..", "..", "bin", "scifi.js");
    const exec = promisify(execFile);
    const shown = await exec(process.execPath, [bin, "audit", "show", run.dir]);
    expect(shown.stdout).toContain("work (iter 1 step 0) -> scripted/scripted-sdk");
    expect(shown.stdout).toContain('tool shell {"command":"ls data"}\n   result: run1.csv\n');
    expect(shown.stdout).toContain("injected memory memory/global.md#3");
    const stats = await exec(process.execPath, [bin, "audit", "stats", run.dir, "--json"]);
    const parsed = JSON.parse(stats.stdout) as {
      totals: { calls: number };
      byModel: Record<string, unknown>;
    };
    expect(parsed.totals.calls).toBe(4);
    expect(Object.keys(parsed.byModel)).toEqual(["scripted/scripted-sdk"]);
  });
});
