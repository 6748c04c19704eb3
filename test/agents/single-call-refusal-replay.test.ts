// A single call refused for length, shortened and sent again (runner/agents/refused-brief.ts), on a
// scripted model (labelled scripted) in both wire formats, then replayed from its tape: the replay
// meets the recorded refusal, lowers the budget the same way and sends the same second request (a
// divergence would stop it), with no recorded call left unused.
import { expect, it } from "vitest";
import { z } from "zod";
import type { RefusedRetry } from "../../runner/agents/refused-brief.ts";
import { structuredCall } from "../../runner/agents/structured.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { freshRun, writeScript } from "../llm/helpers.ts";

const WORDS = {
  scripted: "prompt is too long: 30000 tokens > 20000 maximum",
  "scripted-openai":
    "This model's maximum context length is 20000 tokens. However, your messages resulted in 30000 tokens. Please reduce the length of the messages.",
};

async function call(model: Gateway, retried: RefusedRetry[]) {
  return structuredCall(
    model,
    {
      role: "prescan",
      kind: "control",
      rank: 1,
      system: "Plan the next pass.",
      messages: [
        { role: "user", content: [{ type: "text", text: `Task memory:\n${"notes ".repeat(4000)}` }] },
      ],
      meta: { runId: "r1" },
    },
    z.object({ plan: z.string() }),
    "plan",
    undefined,
    { parts: [], onRetried: (r) => retried.push(r) },
  );
}

it.each(["scripted", "scripted-openai"] as const)(
  "a refused single call retried shorter replays with no divergence (%s)",
  async (scheme) => {
    const script = writeScript(
      [
        "context_window: 20000",
        "prescan:",
        `  - { status: 400, message: ${JSON.stringify(WORDS[scheme])} }`,
        '  - json: { plan: "p" }',
      ].join("\n"),
    );
    const recorded = freshRun("r1");
    const model = (await createModel(`${scheme}:${script}`, recorded.tape, {
      retry: { maxRetries: 0 },
    })) as Gateway;
    const retried: RefusedRetry[] = [];
    try {
      expect((await call(model, retried)).value.plan).toBe("p");
    } finally {
      await model.close();
    }
    expect(retried).toHaveLength(1);
    const again = freshRun("r1-replay");
    const replay = (await createModel(`replay:${recorded.dir}`, again.tape)) as Gateway;
    const replayedRetries: RefusedRetry[] = [];
    try {
      expect((await call(replay, replayedRetries)).value.plan).toBe("p");
    } finally {
      await replay.close();
    }
    expect(replayedRetries).toEqual(retried);
    const end = readTape(again.tapePath).find((r) => r.kind === "event" && r.event === "replay_end");
    expect(end).toMatchObject({ data: { unused: 0 } });
  },
);
