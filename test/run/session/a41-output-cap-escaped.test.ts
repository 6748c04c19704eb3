// Attack on issue 41's context budget (runner/run/session/context-budget.ts outputCap, used by
// runner/run/session/conversation.ts), found by attacker a41; fixed: outputs are cut by capToBudget, the
// estimate's own measure (JSON bytes), after the character cap.
// Doc promise: docs/loop.md "Context budget, compaction and recall", point 5: "under a budget the
// tool output cap is at most a quarter of the budget (about three characters a token), so one
// output never fills a small window alone"; and the estimate counts "binary output, escaped six
// bytes a character, ... for what it costs".
// What happened: the cap is a number of characters (0.75 x budget), but the estimate the budget
// is kept with counts bytes of the JSON text: a character the JSON escapes (a control byte:
// `printf '\1%.0s' {1..99999}`, a binary file cat'ed) counts two tokens, a CJK character one. So
// the agent's one command output, capped, is 1.5 x the whole budget of control bytes (0.75 x of
// CJK text, 0.5 x of emoji). At 1.5 x the newest output is elided at once (fit's "a refusal is
// certain" branch): the agent never sees any of it, and `recall` returns the same over-budget
// text, elided again at the next call: the output cannot be read at all. At 0.75 x every call
// after it compacts again (the cache prefix never holds).
// Suggested fix: cap by the estimate, not by characters: cut the output until
// estimateTokens(output) <= OUTPUT_SHARE x budget (binary search on the cut, or count each
// character's escaped JSON bytes while cutting); recall's output the same way.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createModel } from "../../../runner/llm/create-model.ts";
import { capToBudget, estimateTokens, OUTPUT_SHARE } from "../../../runner/run/session/context-budget.ts";
import { runPass } from "../../../runner/run/session/conversation.ts";
import { DEFAULT_LIMITS, RunBudget } from "../../../runner/run/session/limits.ts";
import { reportDoneTool } from "../../../runner/tools/report-done.ts";
import { defineTool } from "../../../runner/tools/tool.ts";
import { calls, freshRun, writeScript } from "../../llm/helpers.ts";

describe("a41: one capped tool output holds at most a quarter of the budget, whatever its characters", () => {
  const budget = 8000;
  it.each([
    ["ASCII", "a"],
    ["control bytes", "\u0001"],
    ["CJK", "漢"],
    ["emoji", "😀"],
  ])("%s", (_, char) => {
    const output = capToBudget(char.repeat(200_000), budget);
    expect(output.length).toBeGreaterThan(500);
    // A little slack for the cut marker's own text.
    expect(estimateTokens(output)).toBeLessThanOrEqual(OUTPUT_SHARE * budget + 50);
  });
});

// The same in a pass (scripted model with a window, labelled): a command prints control bytes
// (as `cat` of a binary file does). Today the agent sees only the placeholder, and `recall` of it
// returns the same over-budget text, elided again: it can read none of it.
const binaryTool = defineTool({
  name: "dump",
  effect: "exec",
  description: new URL("./context-budget-emit.md", import.meta.url),
  input: z.strictObject({ chars: z.number().int().min(1) }),
  async execute({ chars }) {
    return { ok: true, output: `BIN:${"\u0001".repeat(chars)}` };
  },
});

it("a41: a capped binary output is readable by the agent, directly or through recall", async () => {
  const file = writeScript(
    [
      "context_window: 12000",
      "work:",
      "  - tool_calls: [{ name: dump, input: { chars: 100000 } }]",
      "  - tool_calls: [{ name: recall, input: { id: toolu_scripted_1_0 } }]",
      "  - tool_calls: [{ name: report_done, input: { claim: read, summary: read } }]",
    ].join("\n"),
  );
  const run = freshRun();
  const model = await createModel(`scripted:${file}`, run.tape);
  try {
    const result = await runPass({
      model,
      tools: new Map([
        [binaryTool.name, binaryTool],
        [reportDoneTool.name, reportDoneTool],
      ]),
      toolContext: { sandbox: undefined as never, bashTimeoutMs: 1000, maxOutputChars: 50_000 },
      limits: { ...DEFAULT_LIMITS },
      budget: new RunBudget({ ...DEFAULT_LIMITS }),
      request: { role: "work", kind: "work", rank: 1, system: "Work.", meta: { runId: "a41" } },
      brief: "Dump, then report done.",
      textReply: "nudge",
      blockerNudge: () => "report a blocker",
    });
    expect(result.exit.type).toBe("done");
    // Some request the model was sent held the output (or its recall) as text, not a placeholder.
    const sent = calls(run.tapePath).map((c) => JSON.stringify(c.request.messages));
    expect(sent.some((m) => m.includes("BIN:\\u0001"))).toBe(true);
  } finally {
    await (model as { close(): Promise<void> }).close();
  }
});
