// A long `retry-after` (above maxDelayMs) from the scripted server, with the real header through the
// real SDKs: it is waited for when the run's wall time allows it (said in the live display), the call
// fails at once with the reason when it does not, and another model of the rank answers at once when
// one is configured. Time is scaled: the gateway's sleep and clock are fakes, nobody waits 120 s.
import { afterEach, describe, expect, it } from "vitest";
import { readTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { ScriptedServer } from "../../runner/llm/scripted/server.ts";
import { NoModelAvailable } from "../../runner/llm/types.ts";
import { plainLine, renderBlock } from "../../runner/run/session/display.ts";
import { DEFAULT_LIMITS } from "../../runner/run/session/limits.ts";
import { calls, freshRun, request, userText, writeScript } from "./helpers.ts";

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
});

/** A clock that only moves when the gateway sleeps. */
function fakeTime() {
  let now = 1_700_000_000_000;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    sleep: async (ms: number) => {
      slept.push(ms);
      now += ms;
    },
  };
}

const hello = () => request({ messages: [userText("hello")] });
const LONG = `  - status: 429\n    retry_after: 120\n`;

describe.each(["scripted", "scripted-openai"])("a long retry-after, %s", (scheme) => {
  it("is waited for when the run's wall time allows it, and the display says so", async () => {
    const time = fakeTime();
    const notices: (string | undefined)[] = [];
    const run = freshRun();
    const model = await createModel(
      `${scheme}:${writeScript(`work:\n${LONG}  - text: "after the wait"\n`)}`,
      run.tape,
      {
        retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 5000, timeoutMs: 5000 },
        deadline: time.now() + 300_000,
        sleep: time.sleep,
        now: time.now,
        onNotice: (notice) => notices.push(notice),
      },
    );
    open.push(model);
    const reply = await model.complete(hello());
    expect(reply.content).toEqual([{ type: "text", text: "after the wait" }]);
    expect(time.slept).toEqual([120_000]);
    const waiting = "waiting 120 s: the provider asked to retry after 120 s (429)";
    expect(notices).toEqual([waiting, undefined]);
    expect(calls(run.tapePath)[0]?.attempts).toMatchObject([
      { outcome: "retry", reason: "rate_limit", status: 429, delayMs: 120_000 },
    ]);
    expect(readTape(run.tapePath).some((r) => r.kind === "event" && r.event === "retry_wait")).toBe(true);
    // The live display (TTY block and plain log line) shows the wait.
    const status = {
      runId: "r",
      iteration: 1,
      phase: "work",
      step: 1,
      toolCalls: 0,
      tokens: 0,
      usd: 0,
      elapsedMs: 0,
      stepsLeft: 1,
      toolCallsLeft: 1,
      limits: DEFAULT_LIMITS,
      notice: waiting,
    };
    expect(renderBlock(status)).toContain(waiting);
    expect(plainLine(status)).toContain(waiting);
  });
});

describe("a long retry-after beyond what the run can give", () => {
  it("fails at once with the reason when the wall time left is shorter", async () => {
    const time = fakeTime();
    const run = freshRun();
    const model = await createModel(
      `scripted:${writeScript(`work:\n${LONG}  - text: "never"\n`)}`,
      run.tape,
      {
        retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 5000, timeoutMs: 5000 },
        deadline: time.now() + 30_000,
        sleep: time.sleep,
        now: time.now,
      },
    );
    open.push(model);
    const error = await model.complete(hello()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoModelAvailable);
    expect((error as Error).name).toBe("ModelsUnreachable"); // an outage: scifi eval counts it an error
    expect((error as Error).message).toMatch(
      /the provider asked to retry after 120 s \(429\), more than the 30 s of wall time the run has left/,
    );
    expect(time.slept).toEqual([]);
    const [record] = calls(run.tapePath);
    expect(record?.attempts).toMatchObject([{ outcome: "fail", reason: "rate_limit", status: 429 }]);
    expect(record?.error?.message).toContain("30 s of wall time");
  });

  it("falls back to the next model of the rank at once when one is configured", async () => {
    const time = fakeTime();
    const a = await ScriptedServer.start(writeScript(`work:\n${LONG}`));
    const b = await ScriptedServer.start(writeScript(`work:\n  - text: "from b"\n`));
    open.push(a, b);
    const entry = (name: string, s: ScriptedServer) => ({
      name,
      provider: "anthropic" as const,
      model: `scripted-${name}`,
      baseURL: s.baseURL,
      rank: 1,
      prices: { input: 0, output: 0 },
      noApiKey: true,
    });
    const run = freshRun();
    const model: Gateway = await createModel({ models: [entry("a", a), entry("b", b)] }, run.tape, {
      retry: { maxRetries: 2, baseDelayMs: 10, maxDelayMs: 5000, timeoutMs: 5000 },
      deadline: time.now() + 600_000,
      sleep: time.sleep,
      now: time.now,
    });
    open.push(model);
    const reply = await model.complete(hello());
    expect(reply.content).toEqual([{ type: "text", text: "from b" }]);
    expect(time.slept).toEqual([]);
    const [record] = calls(run.tapePath);
    expect(record?.entry).toBe("b");
    expect(record?.attempts).toMatchObject([{ entry: "a", outcome: "fallback", status: 429 }]);
    expect(record?.attempts?.[0]?.error).toContain("the provider asked to retry after 120 s (429)");
  });
});
