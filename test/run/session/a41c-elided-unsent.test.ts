// Attack on issue 41's records of elided outputs (attacker a41c; runner/run/session/context-budget.ts
// fit "A newest output that alone passes the budget ... is elided too", #elide's placeholder).
// Fixed (fix41-replay).
// Doc promise: docs/loop.md "Context budget, compaction and recall": an elided output's placeholder
// says "The full text is on the audit tape (record S)"; design.md: "the full text stays on the tape
// where the agent can ask for it again"; trust.md: "the records say what happened".
// What happened: tool outputs are on the tape only inside the requests that carried them. When the
// newest step's outputs together pass the budget (ten parallel calls, each at the quarter-budget
// cap), the runner elides some of them before any request carries them: their placeholders still
// say "The full text is on the audit tape" (with no record, as none sent it), `recall` answers
// from the pass's memory while it lasts, and once the pass ends those outputs are nowhere: not on
// the tape, not on the history, not in the run folder.
// Fixed: an output elided before any recorded request carried it is first put on the tape as a
// `tool_output` event (Model.recordOutput; the call id, role, step and the text, redacted like every
// record), and its placeholder says so ("in a tool_output record"); `audit show --call` finds it.
// Suggested fix (taken): put an output on the tape (an event with the call id and the full text, redacted
// like a call) before it can be elided unsent, and name that record in the placeholder; or never
// elide an output no request has carried without recording it so.
import { afterEach, expect, it } from "vitest";
import { findToolOutput } from "../../../runner/audit/tool-output.ts";
import { readTape } from "../../../runner/audit/verify.ts";
import { closeAll, DONE, emits, scriptedPass } from "../../attack/a41c-pass.ts";

afterEach(closeAll);

it.each(["scripted", "scripted-openai"])(
  "a41c: every output the runner elided is on the audit tape, as its placeholder says (%s)",
  async (scheme) => {
    const parallel = Array.from(
      { length: 10 },
      (_, i) => `{ name: emit, input: { chars: 9000, tag: "p-${i}" } }`,
    );
    const run = await scriptedPass(scheme, [
      "context_window: 16000",
      "work:",
      ...emits(2, 3000),
      `  - tool_calls: [${parallel.join(", ")}]`,
      ...emits(2, 3000, (i) => `after-${i}`),
      DONE,
    ]);
    expect(run.result?.exit.type).toBe("done");
    const placeholders = (run.result?.messages ?? [])
      .flatMap((m) => m.content)
      .filter((b) => b.type === "tool_result" && b.content.startsWith("[scifi elided"));
    expect(placeholders.length).toBeGreaterThan(0);
    const tape = JSON.stringify(readTape(run.tapePath));
    const missing = Array.from({ length: 10 }, (_, i) => `p-${i}: zzzz`).filter(
      (head) => !tape.includes(head),
    );
    expect(missing).toEqual([]);
    // Each placeholder names where its text is, and the call id finds it (audit show --call).
    const records = readTape(run.tapePath);
    for (const block of placeholders) {
      if (block.type !== "tool_result") continue;
      const found = findToolOutput(records, block.toolUseId);
      expect(found?.text).not.toMatch(/^\[scifi elided/);
      const where =
        found?.where === "tool_output" ? "in a tool_output record" : "in the request that first sent it";
      expect(block.content).toContain(`${where} (scifi audit show RUN --call "${block.toolUseId}")`);
    }
    const unsent = placeholders.filter(
      (b) => b.type === "tool_result" && b.content.includes("tool_output record"),
    );
    expect(unsent.length).toBeGreaterThan(0);
  },
);
