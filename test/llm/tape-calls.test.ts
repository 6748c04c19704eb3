// A resumed run with a scripted model continues each role's queue where the run stood: the replies
// used by calls before the checkpoint it resumed from are skipped (a 500 retried counts too), while
// the interrupted phase, made again, gets the replies it got before.
import { afterEach, describe, expect, it } from "vitest";
import { readTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { repliesUsed, standingCalls } from "../../runner/llm/tape-calls.ts";
import type { AgentRole } from "../../runner/llm/types.ts";
import { freshRun, request, userText, writeScript } from "./helpers.ts";

const open: Gateway[] = [];
afterEach(async () => {
  for (const m of open.splice(0)) await m.close();
});

const SCRIPT = `prescan:
  - text: p1
  - text: p2
work:
  - status: 500
  - text: w1
  - text: w2
  - text: w3
`;

async function ask(model: Gateway, role: AgentRole, iteration: number): Promise<string> {
  const reply = await model.complete(
    request({
      role,
      kind: role === "work" ? "work" : "control",
      messages: [userText(`${role} ${iteration}`)],
      meta: { runId: "test-run", iteration },
    }),
  );
  return reply.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

async function openModel(file: string, tape: ReturnType<typeof freshRun>["tape"]): Promise<Gateway> {
  const model = await createModel(`scripted:${file}`, tape, { retry: { baseDelayMs: 1, maxRetries: 2 } });
  open.push(model);
  return model;
}

describe.each([
  // Killed in the work pass after the pre-scan's checkpoint: the pass is made again from w1.
  { from: "prescan", next: { prescan: "p2", work: "w1" }, used: { prescan: 1 } },
  // Killed after the work pass's checkpoint: the queue goes on after w2.
  { from: "work", next: { prescan: "p2", work: "w3" }, used: { prescan: 1, work: 3 } },
])("a scripted run resumed from its $from checkpoint", ({ from, next, used }) => {
  it("continues each role's queue where the run stood", async () => {
    const file = writeScript(SCRIPT);
    const run = freshRun();
    const first = await openModel(file, run.tape);
    expect(await ask(first, "prescan", 1)).toBe("p1");
    expect(await ask(first, "work", 1)).toBe("w1");
    expect(await ask(first, "work", 1)).toBe("w2");
    await first.close();
    open.splice(0);
    run.tape.append({ kind: "event", event: "resumed", data: { fromPhase: from, iteration: 1, resumes: 1 } });

    expect(repliesUsed(readTape(run.tapePath))).toEqual(used);
    const resumed = await openModel(file, run.tape);
    expect(await ask(resumed, "work", 1)).toBe(next.work);
    expect(await ask(resumed, "prescan", 2)).toBe(next.prescan);
  });
});

it("a resume with another script starts that script from its beginning", async () => {
  const run = freshRun();
  const first = await openModel(writeScript(SCRIPT, "first.yaml"), run.tape);
  expect(await ask(first, "prescan", 1)).toBe("p1");
  expect(await ask(first, "work", 1)).toBe("w1");
  run.tape.append({ kind: "event", event: "resumed", data: { fromPhase: "work", iteration: 1, resumes: 1 } });
  const other = await openModel(writeScript(SCRIPT, "second.yaml"), run.tape);
  expect(await ask(other, "prescan", 2)).toBe("p1");
});

it("the calls of a phase made again stand once", () => {
  const run = freshRun();
  const call = (role: string, iteration: number, seq: number) =>
    ({ kind: "call", role, iteration, seq, attempts: [], response: { content: [] } }) as never;
  const resumed = (fromPhase: string, iteration: number) =>
    ({ kind: "event", event: "resumed", data: { fromPhase, iteration } }) as never;
  const records = [
    call("prescan", 1, 1),
    call("work", 1, 2),
    resumed("prescan", 1),
    call("work", 1, 3),
    call("review", 1, 4),
    call("prescan", 2, 5),
    resumed("iteration_end", 1),
    call("prescan", 2, 6),
  ];
  expect(standingCalls(records).map((c) => c.seq)).toEqual([1, 3, 4, 6]);
  run.tape.close();
});
