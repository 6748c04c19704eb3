// Replay reproduces a run: each shipped example, run with its scripted model on Docker, is replayed
// by run id (`--model replay:<run id>`) on a fresh copy of the task (another host path), offline,
// and ends with the same verdict and every recorded call answered, none left over and no
// divergence. A changed task (the SAM's To-do edited) stops at the first differing call with the
// JSON path of the difference and the text around it.
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../runner/audit/types.ts";
import { readTape, verifyTape } from "../../runner/audit/verify.ts";
import type { RunResult } from "../../runner/run/session/deps.ts";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, runScripted, type Workspace, workspace } from "../run/harness.ts";

const RETRY = { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 };

function answered(dir: string): CallRecord[] {
  return readTape(join(dir, "audit.jsonl")).filter(
    (r): r is CallRecord => r.kind === "call" && r.response !== undefined,
  );
}

/**
 * A fresh copy of the task and a home that holds the recorded run (group memory as it was when the
 * recorded run started: the recorded run's own final review wrote to its home's group memory).
 */
function replayWorkspace(example: string, recorded: RunResult): Workspace {
  const ws = workspace(example);
  cpSync(recorded.dir, join(ws.home, "runs", recorded.runId), { recursive: true });
  return ws;
}

function replay(ws: Workspace, runId: string): Promise<RunResult> {
  return runTask({ home: ws.home, task: ws.sam, backend: "docker", model: `replay:${runId}`, retry: RETRY });
}

describe.skipIf(!hasEngine("docker"))("replay of the shipped examples (docker)", { timeout: 900_000 }, () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it.each([
    ["verilator-counter-debug", "verilator-pass.yaml"],
    ["gfortran-build-run", "gfortran-pass.yaml"],
    ["two-level-subsams", "subsams-pass.yaml"],
  ])("%s: same verdict, zero divergences", async (example, script) => {
    const { result } = await runScripted(workspace(example), script);
    expect(result.outcome.status).toBe("passed");
    const recorded = answered(result.dir);

    const ws = replayWorkspace(example, result);
    const again = await replay(ws, result.runId);
    expect(again.outcome).toEqual(result.outcome);
    expect(again.runId).not.toBe(result.runId);
    const tape = readTape(join(again.dir, "audit.jsonl"));
    const calls = tape.filter((r): r is CallRecord => r.kind === "call");
    expect(calls.filter((c) => c.error)).toEqual([]);
    expect(calls.map((c) => [c.provider, c.role])).toEqual(recorded.map((c) => ["replay", c.role]));
    expect(calls.map((c) => c.response?.content)).toEqual(recorded.map((c) => c.response?.content));
    const end = tape.find((r) => r.kind === "event" && r.event === "replay_end");
    expect(end?.kind === "event" && end.data).toEqual({
      answered: recorded.length,
      recorded: recorded.length,
      unused: 0,
    });
    expect(verifyTape(join(again.dir, "audit.jsonl"))).toMatchObject({ ok: true });

    if (example !== "verilator-counter-debug") return;
    // A changed task: the To-do of the SAM is edited; the pre-scan's prompt is the first to differ.
    const changed = replayWorkspace(example, result);
    const sam = readFileSync(changed.sam, "utf8");
    writeFileSync(changed.sam, sam.replace("Find the bug in", "Find and explain the bug in"));
    const error = await replay(changed, result.runId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(
      /^replay: call 1 \(prescan, iteration 1\) diverges from the recorded call \(seq \d+ of /,
    );
    expect(message).toMatch(
      /first difference at \$\.request\.messages\[0\]\.content\[0\]\.text, character \d+\n {2}recorded: \.\.\."[^\n]*Find the bug in[^\n]*"\.\.\.\n {2}now: {6}\.\.\."[^\n]*Find and explain the bug in/,
    );
    // 80 characters either side, not the whole multi-KB prompt.
    for (const line of message.split("\n").slice(2)) expect(line.length).toBeLessThan(240);
  });
});
