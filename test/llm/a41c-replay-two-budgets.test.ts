// Attack on issue 41's exact replay (attacker a41c; runner/llm/providers/replay.ts recordedBudget).
// Fixed (fix41-replay).
// Doc promise: docs/loop.md "Context budget, compaction and recall": "Each request records the
// budget it was kept under (`contextBudget`), so a replay gets the same budget, compacts at the
// same points and meets the same recorded refusals: it sends the same requests (zero
// divergences)"; docs/models.md "Replay": a resumed run replays ("Calls a resumed run made again
// ... are answered once").
// What happened: the replay gives every pass of a kind and rank one budget, the largest any call of
// the tape recorded. A run resumed under another window (the night's vLLM relaunched with another
// `--max-model-len` after the node was preempted, read again at start; or `contextWindow` edited in
// models.yaml before `scifi run --resume`) holds passes kept under two budgets: the replay keeps
// the later pass under the earlier, larger one, and diverges at its first call
// ("first difference at $.request.contextBudget, recorded: 7808, now: 11808").
// Fixed: recordedBudget gives a pass the `contextBudget` of the next recorded call of its kind and
// rank (the pass's own first call), so each replayed pass gets its own recorded budget.
// Suggested fix (taken): give each replayed pass the budget its own first recorded call carries (the
// replay provider knows which recorded call comes next: `contextBudget` could return that call's
// budget when its kind and rank match), not the maximum over the run.
import { afterEach, expect, it } from "vitest";
import { readTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { closeAll, DONE, emits, opened, passOn, scriptedPass } from "../attack/a41c-pass.ts";
import { freshRun } from "./helpers.ts";

afterEach(closeAll);

it("a41c: a run resumed under a smaller window replays with 0 divergences (scripted)", async () => {
  const run = freshRun("a41c");
  // Before the kill: a pass under a 20,000-token window.
  const first = await scriptedPass("scripted", ["context_window: 20000", "work:", ...emits(10, 3000), DONE], {
    runDir: run,
  });
  await closeAll();
  // After the resume, in a new process: the server now says 16,000.
  const second = await scriptedPass(
    "scripted",
    ["context_window: 16000", "work:", ...emits(10, 3000, (i) => `b-${i}`), DONE],
    { runDir: run, scriptName: "after-resume.yaml" },
  );
  await closeAll();
  expect([first.result?.exit.type, second.result?.exit.type]).toEqual(["done", "done"]);
  expect(new Set(second.tape.map((c) => c.request.contextBudget))).toEqual(
    new Set([20000 - 8192, 16000 - 8192]),
  );

  const again = freshRun("a41c-replay");
  const model = (await createModel(`replay:${run.dir}`, again.tape)) as Gateway;
  opened.push(model);
  const one = await passOn(model, again);
  const two = await passOn(model, again);
  await closeAll();
  expect(one.error?.message).toBeUndefined();
  expect(two.error?.message).toBeUndefined();
  const end = readTape(again.tapePath).find((r) => r.kind === "event" && r.event === "replay_end");
  expect(end).toMatchObject({ data: { unused: 0 } });
});
