// Attack on the accounting of earlier attempts (attacker session eval3; from docs/eval.md).
// Promise ("result.json"): `usd` is "its run's spend ... plus every earlier attempt's (`earlier`)",
// `earlier` lists "the runs this trial started before the counted one, each paid for"; and ("The
// statistics"): "a result counts once". A run is paid for once.
// What was done: a trial's attempts.jsonl in which one earlier run's line appears twice (a line
// appended again: an append replayed after an NFS timeout, a trial folder merged by hand from a
// backup); that run's tape records one call costing USD 1. earlierAttempts (what a trial's result
// is made with) is asked for the earlier attempts before the current run.
// What happened: the same run is listed twice and its USD summed twice (USD 2 for USD 1 spent):
// the lines are not keyed by runId, so the trial's `usd`, the cell's `usdPerPass` and the budget's
// `spentUsd` are inflated (and a budget stops early).
// Fixed: attempts are keyed by runId (readAttempts and earlierAttempts keep each run once).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { earlierAttempts, readAttempts } from "../../runner/eval/attempts.ts";

describe("eval3: an earlier run named twice in attempts.jsonl", () => {
  it("is paid for once", () => {
    const root = mkdtempSync(join(tmpdir(), "eval3-twice-"));
    const runDir = join(root, "runs", "r1");
    mkdirSync(runDir, { recursive: true });
    writeFileSync(
      join(runDir, "audit.jsonl"),
      `${JSON.stringify({ kind: "call", usage: { input: 1000, output: 0 }, costUsd: 1, hash: "h1" })}\n`,
    );
    // The trial's own run: its state names the trial's copy.
    const evalDir = join(root, "evals", "e");
    const samFile = join(evalDir, "trials", "t", "task", "task.md");
    writeFileSync(join(runDir, "state.json"), JSON.stringify({ version: 1, runId: "r1", samFile }));
    mkdirSync(join(evalDir, "trials", "t"), { recursive: true });
    const line = JSON.stringify({ runId: "r1", runDir, startedAt: "2026-01-01T00:00:00.000Z" });
    writeFileSync(join(evalDir, "trials", "t", "attempts.jsonl"), `${line}\n${line}\n`);
    const attempts = readAttempts(evalDir, "t", { home: root, samFile });
    const earlier = earlierAttempts([...attempts, ...attempts], "r2");
    // Before a fix: two entries, USD 2.
    expect(earlier.map((a) => a.runId)).toEqual(["r1"]);
    expect(earlier.reduce((s, a) => s + a.usd, 0)).toBe(1);
  });
});
