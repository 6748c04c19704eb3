// Attack on issue 41's context budget (runner/llm/context-window.ts promptBudget,
// runner/run/session/conversation.ts), found by attacker a41; fixed: the reply's reservation drops to a
// quarter of the window, with a warning on the tape (replyReservation).
// Doc promise: docs/models.md "Context windows": "Every request the runner sends fits its model's
// context window less the reply's reservation (`maxTokens`, default 8,192)"; the window may come
// from the server (vLLM's `max_model_len`); issue 41 names the cluster user's small local model.
// What happened: a model whose window is at most its reply reservation (vLLM started with
// `--max-model-len 8192`, a common setting for a small local model, and no `maxTokens` on its
// entry) gets a prompt budget of 0 (promptBudget clamps to 0), and nothing says so: the runner
// sends the first request anyway (`max_tokens` 8192 beside a 484-token prompt), the server
// refuses it ("input length and `max_tokens` exceed context limit: 484 + 8192 > 8192"), the
// compacted retry has nothing to compact, and the run ends ContextTooLong at its first call. Every
// night with that model fails the same way, with an error about the prompt's length.
// Suggested fix: when window - maxTokens leaves too little (say under half the window), lower the
// reply's reservation for that model (e.g. to a quarter of the window) and say so in the
// `context_window` tape event; or refuse at gateway start naming the entry, its window and its
// maxTokens ("set maxTokens: 2048 on <entry> in models.yaml").
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { createModel } from "../../runner/llm/create-model.ts";
import { runPass } from "../../runner/run/session/conversation.ts";
import { DEFAULT_LIMITS, RunBudget } from "../../runner/run/session/limits.ts";
import { defineToolSet } from "../run/session/context-budget-tools.ts";
import { calls, freshRun, writeScript } from "./helpers.ts";

it("a41: a model whose window equals the default reply reservation is never sent a request that cannot fit", async () => {
  const file = writeScript(
    [
      "context_window: 8192",
      "work:",
      "  - tool_calls: [{ name: report_done, input: { claim: done, summary: done } }]",
    ].join("\n"),
  );
  const run = freshRun();
  const model = await createModel(`scripted:${file}`, run.tape);
  try {
    await runPass({
      model,
      tools: defineToolSet(),
      toolContext: { sandbox: undefined as never, bashTimeoutMs: 1000, maxOutputChars: 50_000 },
      limits: { ...DEFAULT_LIMITS },
      budget: new RunBudget({ ...DEFAULT_LIMITS }),
      request: { role: "work", kind: "work", rank: 1, system: "Work.", meta: { runId: "a41" } },
      brief: "Report done.",
      textReply: "nudge",
      blockerNudge: () => "report a blocker",
    }).catch(() => undefined);
    // Whether the pass then runs (a smaller reservation) or is refused before any call (naming
    // maxTokens), no request that the window cannot hold was sent.
    expect(calls(run.tapePath).filter((c) => c.error !== undefined)).toEqual([]);
    // It ran (a smaller reservation), and the tape says why.
    expect(calls(run.tapePath).length).toBeGreaterThan(0);
    const tape = readFileSync(run.tapePath, "utf8");
    expect(tape).toContain('"replyTokens":2048');
    expect(tape).toContain("Set maxTokens");
  } finally {
    await (model as { close(): Promise<void> }).close();
  }
});

it("a41: the reservation is kept when it leaves a quarter of the window, and lowered (with what to set) when not", async () => {
  const { replyReservation } = await import("../../runner/llm/context-window.ts");
  expect(replyReservation(12_000, undefined, "m")).toEqual({ replyTokens: 8192 });
  expect(replyReservation(200_000, 128_000, "m")).toEqual({ replyTokens: 128_000 });
  const lowered = replyReservation(8192, 16_000, "local");
  expect(lowered.replyTokens).toBe(2048);
  expect(lowered.warning).toContain("model 'local'");
  expect(lowered.warning).toContain("maxTokens 16000");
  expect(lowered.warning).toContain("at most 4096");
});
