// Where a replay applies a recorded run's `scifi ctl` limit changes (runner/llm/replay-control.ts,
// a41): before the first recorded call whose workspace context states the new figures, else before
// the first call recorded after the change; refused changes and pauses are not replayed.
import { expect, it } from "vitest";
import type { CallRecord } from "../../runner/audit/types.ts";
import { replayedChanges } from "../../runner/llm/replay-control.ts";
import type { HistoryRecord } from "../../runner/memory/history-events.ts";

const call = (time: string, usd: number, wall: number): CallRecord =>
  ({
    time,
    request: {
      workspaceContext: `Run budget used: 0 of 100 tokens, USD 0.0100 of ${usd}; the run's wall-time limit is ${wall} s.`,
    },
  }) as unknown as CallRecord;

const control = (time: string, extra: Partial<HistoryRecord>): HistoryRecord =>
  ({
    seq: 1,
    time,
    type: "control",
    iteration: 1,
    action: "limits",
    by: "ann@host",
    ...extra,
  }) as HistoryRecord;

it("a change is due before the first call whose context shows it, though recorded while an earlier call was in flight", () => {
  const calls = [
    call("2026-12-04T10:00:01Z", 1, 3600),
    // Recorded after the change (it was in flight), but built before it: still the old figures.
    call("2026-12-04T10:00:20Z", 1, 3600),
    call("2026-12-04T10:00:21Z", 5, 7200),
  ];
  const history = [
    control("2026-12-04T10:00:10Z", {
      to: { usd: 5, walltimeSec: 7200 },
      from: { usd: 1, walltimeSec: 3600 },
    }),
  ];
  expect(replayedChanges(history, calls)).toEqual([
    { beforeCall: 2, by: "ann@host", limits: { usd: 5, walltimeSec: 7200 } },
  ]);
});

it("iterations alone are due before the first call recorded after them; refused changes and pauses are not replayed", () => {
  const calls = [call("2026-12-04T10:00:01Z", 1, 3600), call("2026-12-04T10:00:30Z", 1, 3600)];
  const history = [
    control("2026-12-04T10:00:05Z", { action: "pause" }),
    control("2026-12-04T10:00:06Z", { to: { usd: 0.001 }, refused: "below" }),
    control("2026-12-04T10:00:10Z", { to: { iterations: 4 } }),
  ];
  expect(replayedChanges(history, calls)).toEqual([
    { beforeCall: 1, by: "ann@host", limits: { iterations: 4 } },
  ]);
});
