// One owner per limit: a run's clock, purse and stop are made once and every consumer reads them, so
// a limit changed mid-run (a `scifi ctl` decision file, applied by the run's control) reaches the
// gateway (its deadline, its budget refusal), the budget check and the stop (which ends a running
// command at the deadline as it stands).
// Real gateway over the scripted model (labelled: no real LLM); real decision files and history.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createModel } from "../../../runner/llm/create-model.ts";
import type { Gateway } from "../../../runner/llm/gateway.ts";
import { BudgetExceeded } from "../../../runner/llm/types.ts";
import { HistoryTape, readHistory } from "../../../runner/memory/history.ts";
import {
  limitsRefusal,
  RunControl,
  readDecisions,
  writeDecision,
} from "../../../runner/run/session/control.ts";
import { DEFAULT_LIMITS, runLimits, WallTimeReached } from "../../../runner/run/session/limits.ts";
import { RunCancelled } from "../../../runner/run-ending.ts";
import type { RunState } from "../../../runner/run-folder/state.ts";
import { commandTimeoutMs } from "../../../runner/tools/bash.ts";
import { freshRun, request, userText, writeScript } from "../../llm/helpers.ts";

const open: Gateway[] = [];
afterEach(async () => {
  for (const m of open.splice(0)) await m.close();
});

const SCRIPT = "work:\n  - text: w1\n  - text: w2\n";
const by = "tester@host";

function stateOf(limits: RunState["limits"]): RunState {
  return { iteration: 1, attempts: { root: 1 }, limits } as unknown as RunState;
}

async function ask(model: Gateway): Promise<string> {
  const reply = await model.complete(
    request({ role: "work", kind: "work", messages: [userText("go")], meta: { runId: "test-run" } }),
  );
  return reply.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

describe("one owner per limit", () => {
  it("a limit changed mid-run reaches the gateway, the budget check and the stop (a running command's end)", async () => {
    const { dir, tape } = freshRun();
    const config = { ...DEFAULT_LIMITS, walltimeSec: 2, usd: 0.5, iterations: 3 };
    // The run has spent its whole budget (an earlier process did, per the tape).
    const limits = runLimits(config, { tokens: 10, usd: 0.5, elapsedMs: 0 });
    const history = new HistoryTape(join(dir, "history.jsonl"));
    const state = stateOf(config);
    const control = new RunControl(join(dir, "control"), state, history, limits);
    const model = (await createModel(`scripted:${writeScript(SCRIPT)}`, tape, {
      purse: limits.purse,
      deadline: () => limits.clock.deadline(),
      retry: { maxRetries: 0 },
    })) as Gateway;
    open.push(model);
    limits.clock.start();
    // A command's own timeout is the bash limit alone; the deadline reaches a running command through
    // the stop's signal (what the bash tool hands the sandbox exec), so a deadline moved mid-command
    // moves the command's end too (a41d-walltime-raise-running-command).
    const toolContext = { bashTimeoutMs: 300_000 };

    // Before: the gateway refuses (the purse is at its cap), the budget check agrees, 2 s left.
    await expect(ask(model)).rejects.toBeInstanceOf(BudgetExceeded);
    expect(limits.budget.exhausted()).toMatch(/^budget limit reached/);
    expect(model.deadlineAt()).toBe(limits.clock.startedAt + 2000);
    expect(commandTimeoutMs(toolContext)).toBe(300_000);
    expect(commandTimeoutMs(toolContext, 30)).toBe(30_000);

    // A person raises money and wall time (a decision file, as `scifi ctl` writes it).
    writeDecision(join(dir, "control"), {
      action: "limits",
      at: new Date().toISOString(),
      by,
      limits: { usd: 2, walltimeSec: 120 },
    });
    control.poll();

    expect(model.deadlineAt()).toBe(limits.clock.startedAt + 120_000);
    expect(commandTimeoutMs(toolContext)).toBe(300_000);
    expect(limits.budget.exhausted()).toBeUndefined();
    expect(await ask(model)).toBe("w1");
    // One count: the gateway charged the purse; the run's budget adds nothing of its own on top.
    const tokens = limits.purse.tokens;
    expect(tokens).toBeGreaterThan(10);
    limits.budget.add(1000, 1);
    expect(limits.purse.tokens).toBe(tokens);
    expect(model.spent.tokens).toBe(tokens);
    // The old deadline passes: the re-armed timer does not stop the run.
    await new Promise((r) => setTimeout(r, 2300));
    expect(limits.stop.signal.aborted).toBe(false);
    expect(state.limits).toMatchObject({ usd: 2, walltimeSec: 120 });

    // Lowered below what is used: refused, recorded, nothing changes.
    writeDecision(join(dir, "control"), {
      action: "limits",
      at: new Date().toISOString(),
      by,
      limits: { walltimeSec: 1 },
    });
    control.poll();
    expect(config.walltimeSec).toBe(120);

    // Lowered to just past the time used: the stop fires at the new deadline with the wall-time reason.
    const newWall = Math.ceil(limits.clock.elapsedMs() / 1000) + 1;
    writeDecision(join(dir, "control"), {
      action: "limits",
      at: new Date().toISOString(),
      by,
      limits: { walltimeSec: newWall },
    });
    control.poll();
    expect(limits.stop.signal.aborted).toBe(false);
    await new Promise((r) => setTimeout(r, 2100));
    expect(limits.stop.signal.aborted).toBe(true);
    expect(limits.stop.ending()).toBeInstanceOf(WallTimeReached);
    expect(limits.budget.exhausted()).toBe(`wall time limit reached (${newWall} s)`);
    limits.clock.stop();

    const events = readHistory(join(dir, "history.jsonl")).filter((e) => e.type === "control");
    expect(
      events.map((e) => (e.type === "control" ? [e.action, e.refused ? "refused" : "applied"] : [])),
    ).toEqual([
      ["limits", "applied"],
      ["limits", "refused"],
      ["limits", "applied"],
    ]);
    expect(events[0]).toMatchObject({
      by,
      from: { usd: 0.5, walltimeSec: 2 },
      to: { usd: 2, walltimeSec: 120 },
    });
    expect(events[1]).toMatchObject({ refused: expect.stringContaining("--walltime 1 s is below the") });
    // Applied decisions are not applied again.
    expect(readDecisions(join(dir, "control"), state.controlApplied)).toEqual([]);
  });

  it("the stop carries a cancel's reason; a pause waits for the boundary and a resume withdraws it", () => {
    const cancel = new AbortController();
    const limits = runLimits({ ...DEFAULT_LIMITS }, { tokens: 0, usd: 0, elapsedMs: 0 }, cancel.signal);
    limits.stop.pause("paused by tester");
    expect(limits.stop.signal.aborted).toBe(false);
    expect(limits.stop.pauseRequested).toBe("paused by tester");
    limits.stop.unpause();
    expect(limits.stop.pauseRequested).toBeUndefined();
    cancel.abort(new RunCancelled("cancelled by the operator while it ran"));
    expect(limits.stop.ending()).toBeInstanceOf(RunCancelled);
  });

  it("refuses a limit below what is used, naming each figure", () => {
    expect(
      limitsRefusal(
        { usd: 0.1, iterations: 1, walltimeSec: 10 },
        { usd: 0.25, iterations: 2, elapsedMs: 30_000 },
      ),
    ).toBe(
      "--iterations 1 is below the 2 iteration(s) a node has already used; --budget-usd 0.1 is below the USD 0.2500 already spent; --walltime 10 s is below the 30 s the run has already run",
    );
    expect(
      limitsRefusal(
        { usd: 0.25, iterations: 2, walltimeSec: 30 },
        { usd: 0.25, iterations: 2, elapsedMs: 30_000 },
      ),
    ).toBeUndefined();
  });
});
