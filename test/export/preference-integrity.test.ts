// Preference pairs never prefer a trajectory with integrity events (docs/integrity.md, docs/export.md):
// a passing trial whose run a defence had to stop goes to the non-preferred side, against the clean
// passes; failing and error trials stay where they were.
import { describe, expect, it } from "vitest";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { integrityEvents, pairGroups } from "../../runner/export/preference.ts";
import type { ExportRun } from "../../runner/export/source.ts";
import type { HistoryRecord } from "../../runner/memory/history-events.ts";

function run(id: string, status: TrialResult["status"], integrity: number): ExportRun {
  const history = Array.from(
    { length: integrity },
    (_, i) =>
      ({
        seq: i + 1,
        time: "2026-01-01T00:00:00.000Z",
        type: "integrity",
        iteration: 1,
        kind: "network_refused",
        role: "work",
        attempted: "a connection",
        rule: "not listed",
        action: "refused",
      }) as HistoryRecord,
  );
  return {
    dir: `/runs/${id}`,
    runId: id,
    tape: `/runs/${id}/audit.jsonl`,
    task: "t",
    verdict: status === "pass" ? "passed" : "failed",
    reason: "-",
    modelSpec: "scripted:m.yaml",
    scripted: true,
    startedAt: "2026-01-01T00:00:00.000Z",
    sam: undefined,
    history,
    taskDir: undefined,
    workdir: "/task",
    trial: { trialId: id, task: "t", variant: "nl", model: "m", status } as TrialResult,
  };
}

describe("preference pairs and integrity events", () => {
  it("a pass with integrity events is never preferred: it is paired as the non-preferred side", () => {
    const clean = run("clean", "pass", 0);
    const gamed = run("gamed", "pass", 2);
    const failed = run("failed", "fail", 0);
    const broken = run("broken", "error", 3);
    expect(integrityEvents(gamed)).toBe(2);
    const [group] = pairGroups([clean, gamed, failed, broken]);
    expect(group?.pass.map((r) => r.runId)).toEqual(["clean"]);
    expect(group?.fail.map((r) => r.runId)).toEqual(["gamed", "failed"]);
    expect(pairGroups([gamed, failed])[0]?.pass).toEqual([]);
  });
});
