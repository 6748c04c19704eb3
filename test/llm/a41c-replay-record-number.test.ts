// Attack on issue 41's exact replay (attacker a41c; runner/run/session/context-budget.ts #elide's
// "(record S)", runner/llm/create-model.ts noteWindow and replay()). Fixed (fix41-replay).
// Doc promise: docs/loop.md "Context budget, compaction and recall": a replay "compacts at the same
// points and meets the same recorded refusals: it sends the same requests (zero divergences)";
// issue 41's acceptance: "replay of a compacted run with 0 divergences".
// What happened: a placeholder names the tape record that first sent the output ("The full text is
// on the audit tape (record 2)"): a number of the recorded run's tape, which the replay's own tape
// does not share. A run's gateway puts a `context_window` event on the tape before any call: one
// for every entry of models.yaml (every production run), and for the scripted model when its
// reservation is lowered (a window under 10,923 tokens). The replay's gateway notes none, so every
// record number is off by that many, and the replay of any compacted run diverges at its first
// compaction ("first difference at $.request.messages[2].content[0].content ... (record 2)" against
// "(record 1)"). The e2e test of issue 41 passes only because its scripted window notes nothing. A
// resumed run's tape (calls made again, resume events) shifts the numbers the same way.
// Fixed: a placeholder names the output by its tool call id, which a replay reproduces (it answers
// with the recorded ids), never by a record number; `scifi audit show RUN --call ID` finds the
// record that holds the full text (runner/audit/tool-output.ts).
// Suggested fix (taken): name the output by something the replay reproduces (the pass's step and call, or
// the call id alone, with the record found by `scifi audit show --call ID`), or have the replay
// compare placeholders with their record numbers read as the recorded run's (map recorded seq to
// replayed seq as calls are answered).
import { afterEach, expect, it } from "vitest";
import { readTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { closeAll, DONE, emits, opened, passOn, scriptedPass } from "../attack/a41c-pass.ts";
import { freshRun } from "./helpers.ts";

afterEach(closeAll);

it("a41c: a compacted run whose tape starts with a context_window event replays with 0 divergences (scripted)", async () => {
  const recorded = await scriptedPass("scripted", [
    "context_window: 10000",
    "work:",
    ...emits(12, 2000),
    DONE,
  ]);
  await closeAll();
  expect(recorded.result?.exit.type).toBe("done");
  expect(recorded.events.filter((e) => e.type === "context").length).toBeGreaterThan(0);
  const first = readTape(recorded.tapePath)[0];
  expect(first?.kind === "event" && first.event).toBe("context_window");

  const again = freshRun("a41c-replay");
  const model = (await createModel(`replay:${recorded.dir}`, again.tape)) as Gateway;
  opened.push(model);
  const replayed = await passOn(model, again);
  await closeAll();
  expect(replayed.error?.message).toBeUndefined();
  const end = readTape(again.tapePath).find((r) => r.kind === "event" && r.event === "replay_end");
  expect(end).toMatchObject({ data: { unused: 0 } });
});
