// Attack on issue 41's `scifi ctl` channel on a live run (real Docker, priced scripted model:
// labelled, no real LLM), found by attacker a41. Failed before fix-41a (now passes). The unit form is
// test/run/session/a41-control-garbage.test.ts; this shows what it does to a running night.
// Doc promise: docs/ctl.md "How it works": the driving process polls control/ and applies each
// new decision (readDecisions: "torn or foreign files skipped"); docs/loop.md: at every exit the
// sandboxes are stopped and the task folder restored.
// What happened: one file named like a decision holding `{"action":"limits"}` (whole JSON, no
// `limits`) written into control/ while the work phase runs: the poll's TypeError is thrown from
// the setInterval callback (control.ts poll, from the timer), uncaught, and `scifi run` dies at
// once (exit 1, "TypeError: Cannot read properties of undefined (reading 'iterations')", a raw
// stack) in the middle of the work phase: no outcome, no history event, none of the exit path
// in runSession's finally (the run's container was gone afterwards: its watchdog held). A
// `scifi run --resume` meets the same file in control.start() before its first phase, so the run
// cannot be continued until a person finds and deletes the file.
// Suggested fix: see test/run/session/a41-control-garbage.test.ts (validate, refuse on the history, never throw
// from poll; catch in the timer).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScriptedServer } from "../../runner/llm/scripted/server.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, waitFor } from "../run/harness.ts";
import { cli, pricedTask, readState, startRun } from "./a41-run.ts";

let server: ScriptedServer | undefined;

describe.skipIf(!hasEngine("docker"))("a41: a garbage decision file on a live run", () => {
  beforeAll(async () => {
    ensureImage();
    const { ScriptedServer } = await import("../../runner/llm/scripted/server.ts");
    server = await ScriptedServer.start(fixture("ctl-priced.yaml"));
  }, 1_800_000);
  afterAll(async () => {
    await server?.close();
  });

  it("is refused on the history; the run goes on and passes", async () => {
    const { home, task, models } = pricedTask(server?.baseURL ?? "");
    const run = await startRun(home, [task, "--models-config", models]);
    await waitFor(() => (readState(run.runDir).phase === "prescan" ? true : undefined), 120_000);
    mkdirSync(join(run.runDir, "control"), { recursive: true });
    writeFileSync(
      join(run.runDir, "control", "000001764800000-0123abcd-limits.json"),
      '{"action":"limits","at":"x","by":"x"}',
    );
    const exit = await run.exit;
    expect(run.out()).not.toContain("Cannot read properties");
    expect(exit.code, run.out()).toBe(0);
    expect(readState(run.runDir).outcome?.status).toBe("passed");
    const controls = readHistory(join(run.runDir, "history.jsonl")).filter((e) => e.type === "control");
    expect(controls).toMatchObject([{ action: "limits", refused: expect.any(String) }]);
    expect((await cli(home, ["status"])).code).toBe(0);
  }, 600_000);
});
