// A replay applies the recorded run's `scifi ctl` limit changes at the same points (a41): each
// applied change on the recorded history (a `control` event with `to`) is due before the first
// recorded call whose workspace context states its new figures (the context shows the money cap and
// the wall time, so the point is exact); a change the context does not show (iterations alone) is
// due before the first call recorded after it. The session applies a due change through the run's
// own control path (a decision file, then poll) before it builds the next request, so the replay
// sends the recorded requests and meets the recorded limits.
import type { CallRecord } from "../audit/types.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import type { LimitConfig } from "../run-folder/state.ts";

/** The limits a `scifi ctl` decision changes (the run's ControlLimits; llm sits below the run). */
type ControlLimits = Partial<Pick<LimitConfig, "iterations" | "walltimeSec" | "usd">>;

export interface ReplayedChange {
  /** The index of the recorded call (in replay order) it is due before. */
  beforeCall: number;
  by: string;
  limits: ControlLimits;
}

/** The recorded run's applied limit changes, each with the call it is due before. */
export function replayedChanges(
  history: readonly HistoryRecord[],
  calls: readonly CallRecord[],
): ReplayedChange[] {
  const out: ReplayedChange[] = [];
  let from = 0;
  for (const event of history) {
    if (event.type !== "control" || event.action !== "limits" || event.refused || !event.to) continue;
    const limits: ControlLimits = {};
    for (const key of ["iterations", "walltimeSec", "usd"] as const) {
      const value = event.to[key];
      if (typeof value === "number") limits[key] = value;
    }
    const shows = (c: CallRecord) => {
      const context = c.request.workspaceContext;
      if (typeof context !== "string") return false;
      if (limits.usd === undefined && limits.walltimeSec === undefined) return false;
      return (
        (limits.usd === undefined || context.includes(` of ${limits.usd};`)) &&
        (limits.walltimeSec === undefined || context.includes(`limit is ${limits.walltimeSec} s`))
      );
    };
    let at = calls.findIndex((c, i) => i >= from && shows(c));
    if (at < 0) at = calls.findIndex((c, i) => i >= from && c.time > event.time);
    if (at < 0) continue;
    out.push({ beforeCall: at, by: event.by ?? "unknown", limits });
    from = at;
  }
  return out;
}
