// Attacks on issue 41's limits and controls (attacker a41) that held: `scifi ctl` given names that
// are paths or nonsense flags, a lowered limit racing the run's spend, two pauses, a resume before
// the pause, foreign and torn files in control/, a wall time past Node's timer range, and an agent
// recalling one huge elided output again and again under a small scripted window (no real LLM).
// What broke is in test/open/a41-*.pending.ts.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { promptTokens } from "../../runner/audit/prefix-cache.ts";
import type { CallRecord } from "../../runner/audit/types.ts";
import { DEFAULT_REPLY_TOKENS } from "../../runner/llm/context-window.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { HistoryTape, readHistory } from "../../runner/memory/history.ts";
import { ContextKeeper } from "../../runner/run/session/context-budget.ts";
import { RunControl, readDecisions, writeDecision } from "../../runner/run/session/control.ts";
import { runPass } from "../../runner/run/session/conversation.ts";
import { DEFAULT_LIMITS, RunBudget, runLimits } from "../../runner/run/session/limits.ts";
import type { RunState } from "../../runner/run-folder/state.ts";
import { calls, freshRun, writeScript } from "../llm/helpers.ts";
import { REPO } from "../run/harness.ts";
import { defineToolSet } from "../run/session/context-budget-tools.ts";

const exec = promisify(execFile);
const by = "a41@attacker";

function live(config = { ...DEFAULT_LIMITS, usd: 1, walltimeSec: 3600, iterations: 3 }) {
  const dir = mkdtempSync(join(tmpdir(), "a41-held-"));
  const controlDir = join(dir, "control");
  mkdirSync(controlDir);
  const limits = runLimits(config, { tokens: 0, usd: 0, elapsedMs: 0 });
  const history = new HistoryTape(join(dir, "history.jsonl"));
  const state = { iteration: 1, attempts: { root: 2 }, limits: config } as unknown as RunState;
  const control = new RunControl(controlDir, state, history, limits);
  const controls = () => readHistory(join(dir, "history.jsonl")).filter((e) => e.type === "control");
  return { dir, controlDir, config, limits, state, control, controls };
}

describe("a41 held: decisions inside the run", () => {
  it("a lower cap that was above the spend when ctl checked it is refused by the run if a call spent past it", () => {
    const run = live();
    // ctl checked against USD 0.10 spent and wrote 0.15; a call charged 0.10 more before the poll.
    run.limits.purse.charge(0.1, 100);
    writeDecision(run.controlDir, { action: "limits", at: "", by, limits: { usd: 0.15 } });
    run.limits.purse.charge(0.1, 100);
    run.control.poll();
    expect(run.config.usd).toBe(1);
    expect(run.controls()).toMatchObject([
      { action: "limits", refused: "--budget-usd 0.15 is below the USD 0.2000 already spent" },
    ]);
    // Iterations below the most-tried node's attempts: refused too.
    writeDecision(run.controlDir, { action: "limits", at: "", by, limits: { iterations: 1 } });
    run.control.poll();
    expect(run.config.iterations).toBe(3);
  });

  it("two pauses keep the first reason; a resume before the boundary withdraws it; nothing applies twice", () => {
    const run = live();
    writeDecision(run.controlDir, { action: "pause", at: "", by: "first@host" });
    writeDecision(run.controlDir, { action: "pause", at: "", by: "second@host" });
    run.control.poll();
    expect(run.limits.stop.pauseRequested).toBe("paused by first@host");
    writeDecision(run.controlDir, { action: "resume", at: "", by });
    run.control.poll();
    run.control.poll();
    expect(run.limits.stop.pauseRequested).toBeUndefined();
    expect(run.controls().map((e) => (e.type === "control" ? e.action : ""))).toEqual([
      "pause",
      "pause",
      "resume",
    ]);
    // A new process on the same state (a resume) applies none of them again.
    const again = new RunControl(
      run.controlDir,
      run.state,
      new HistoryTape(join(run.dir, "h2.jsonl")),
      run.limits,
    );
    again.poll();
    expect(readHistory(join(run.dir, "h2.jsonl"))).toEqual([]);
  });

  it("torn, foreign and look-alike names in control/ are not decisions", () => {
    const run = live();
    const d = run.controlDir;
    writeFileSync(join(d, "000001764800000-0123abcd-pause.json"), '{"action":"pau');
    writeFileSync(join(d, ".000001764800001-0123abcd-pause.json.tmp"), '{"action":"pause"}');
    writeFileSync(join(d, "000001764800002-0123ABCD-pause.json"), '{"action":"pause"}');
    writeFileSync(join(d, "000001764800003-0123abcd-stop.json"), '{"action":"pause"}');
    writeFileSync(join(d, "1764800004-0123abcd-pause.json"), '{"action":"pause"}');
    writeFileSync(join(d, "000001764800005-0123abcd-pause.json~"), '{"action":"pause"}');
    mkdirSync(join(d, "000001764800006-0123abcd-pause.json"));
    expect(readDecisions(d, undefined)).toEqual([]);
    expect(() => run.control.poll()).not.toThrow();
    expect(run.limits.stop.pauseRequested).toBeUndefined();
  });

  it("a wall time raised past Node's timer range (600 h) does not fire the deadline at once", async () => {
    const run = live({ ...DEFAULT_LIMITS, walltimeSec: 3600 });
    run.limits.clock.start();
    writeDecision(run.controlDir, { action: "limits", at: "", by, limits: { walltimeSec: 600 * 3600 } });
    run.control.poll();
    await new Promise((r) => setTimeout(r, 300));
    expect(run.limits.stop.signal.aborted).toBe(false);
    expect(run.limits.clock.leftMs()).toBeGreaterThan(599 * 3600 * 1000);
    expect(run.limits.budget.exhausted()).toBeUndefined();
    run.limits.clock.stop();
  });
});

async function ctl(home: string, args: string[]) {
  return exec(process.execPath, [join(REPO, "bin/scifi.js"), "ctl", ...args], {
    env: { ...process.env, SCIFI_HOME: home },
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}

describe("a41 held: scifi ctl given paths and nonsense", () => {
  const root = mkdtempSync(join(tmpdir(), "a41-cli-"));
  const home = join(root, "home");
  // A state.json one level above the runs folder and one beside home: a `..` must reach neither.
  const plant = (dir: string) => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "state.json"),
      JSON.stringify({
        version: 1,
        runId: "planted",
        phase: "work",
        iteration: 1,
        attempts: { root: 1 },
        spent: { tokens: 0, usd: 0, elapsedMs: 1000, at: new Date().toISOString() },
        limits: { ...DEFAULT_LIMITS },
        resumes: 0,
        paused: { at: "2026-12-04T03:00:00.000Z", phase: "work", reason: "x" },
      }),
    );
  };
  plant(join(home, "runs", "real"));
  plant(home);
  plant(join(root, "other"));

  it.each([
    [["../other", "limits", "--iterations", "9"]],
    [["real/../../other", "limits", "--iterations", "9"]],
    [[join(root, "other"), "limits", "--iterations", "9"]],
    [["real", "limits", "--iterations", "0"]],
    [["real", "limits", "--iterations", "-3"]],
    [["real", "limits", "--budget-usd", "0"]],
    [["real", "limits", "--budget-usd", "-1"]],
    [["real", "limits", "--budget-usd", "1e3"]],
    [["real", "limits", "--budget-usd", "NaN"]],
    [["real", "limits", "--walltime", "0s"]],
    [["real", "limits", "--walltime", "-5m"]],
    [["real", "limits", "--walltime", "Infinity"]],
    [["real", "pause"]],
    [["real", "resume", "--walltime", "1h"]],
  ])("scifi ctl %j is refused, exit 2, nothing written", async (args) => {
    const r = await ctl(home, args);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(/^scifi ctl: /);
    for (const dir of [join(home, "runs", "real"), home, join(root, "other")])
      expect(existsSync(join(dir, "control")) ? readdirSync(join(dir, "control")) : []).toEqual([]);
  });
});

let model: Gateway | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

describe("a41 held: recall under a small window", () => {
  it("recalling one huge elided output again and again keeps every request inside the window", async () => {
    const WINDOW = 12_000;
    const file = writeScript(
      [
        `context_window: ${WINDOW}`,
        "work:",
        ...Array.from(
          { length: 12 },
          (_, i) => `  - tool_calls: [{ name: emit, input: { chars: 6000, tag: "out-${i}" } }]`,
        ),
        ...Array.from(
          { length: 7 },
          () => "  - tool_calls: [{ name: recall, input: { id: toolu_scripted_1_0 } }]",
        ),
        "  - tool_calls: [{ name: recall, input: { id: toolu_other_run_0 } }]",
        "  - tool_calls: [{ name: report_done, input: { claim: done, summary: recalled } }]",
      ].join("\n"),
    );
    const run = freshRun();
    model = (await createModel(`scripted:${file}`, run.tape)) as Gateway;
    const result = await runPass({
      model,
      tools: defineToolSet(),
      toolContext: { sandbox: undefined as never, bashTimeoutMs: 1000, maxOutputChars: 50_000 },
      limits: { ...DEFAULT_LIMITS, stepsPerPass: 200, toolCallsPerPass: 400 },
      budget: new RunBudget({ ...DEFAULT_LIMITS }),
      request: {
        role: "work",
        kind: "work",
        rank: 1,
        system: "You are the work agent.",
        meta: { runId: "a41" },
      },
      brief: "Emit, recall, report done.",
      textReply: "nudge",
      blockerNudge: () => "report a blocker",
    });
    expect(result.exit.type).toBe("done");
    const tape = calls(run.tapePath);
    expect(tape.every((c) => c.error === undefined)).toBe(true);
    for (const call of tape as CallRecord[])
      expect(promptTokens("anthropic", call.wire) + DEFAULT_REPLY_TOKENS).toBeLessThanOrEqual(WINDOW);
    const results = result.messages.flatMap((m) => m.content).filter((b) => b.type === "tool_result");
    // The same recall is a read: after six the runner rejects the repeat.
    expect(
      results.filter((b) => b.type === "tool_result" && b.content.startsWith("Rejected by the runner")),
    ).not.toHaveLength(0);
    // An id the pass never elided (another run's, another pass's) returns nothing.
    expect(
      results.some(
        (b) =>
          b.type === "tool_result" &&
          /No shortened tool output has the id "toolu_other_run_0"/.test(b.content),
      ),
    ).toBe(true);
    expect(new ContextKeeper(1000).recall("toolu_scripted_1_0")).toBeUndefined();
  }, 120_000);
});
