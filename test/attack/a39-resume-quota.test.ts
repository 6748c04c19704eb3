// A39-7 (attacker a39, issue 39; unit level, no sandbox): the integrity quota's byte half and its
// "then nothing" do not survive a resume.
//
// Promise (docs/integrity.md): "A run's history takes at most 2,000 integrity events (2 MiB); past
// that, one `overflow` event says so and later events are not recorded ... A resumed run counts the
// events its history already holds."
// What happened: session.ts builds `new IntegrityRecorder(append, already)` with `already` = the
// number of integrity lines in the history; the recorder starts its byte count at 0 and is "full"
// only when `already >= 2000`. So (a) each resume may append another 2 MiB of events (a run resumed
// k times holds up to (k+1)·2 MiB while under 2,000 events), and (b) a history whose `overflow` was
// written for BYTES (fewer than 2,000 events) records events again after a resume, and a second
// `overflow` later, contradicting "later events are not recorded".
// Suggested fix: count the resumed history's integrity bytes too (`already` as {events, bytes}), and
// start full when the history already holds an `overflow` event.
// Fixed (fix-39): the recorder takes the resumed history's events (count, bytes, overflow), and
// session.ts hands them over.
import { describe, expect, it } from "vitest";
import { type IntegrityEvent, IntegrityRecorder } from "../../runner/run/session/integrity.ts";

const event = (n: number, size: number): IntegrityEvent => ({
  type: "integrity",
  iteration: 1,
  kind: "asset_write",
  role: "work",
  attempted: `${n} ${"x".repeat(size)}`,
  rule: "r",
  action: "a",
});

describe("A39-7 the integrity quota across a resume", () => {
  const quota = { events: 100, bytes: 10_000 };

  it("a resumed run does not add another full byte quota", () => {
    const before: IntegrityEvent[] = [];
    const first = new IntegrityRecorder((e) => before.push(e), 0, quota);
    for (let i = 0; first.record(event(i, 900)); i++);
    const kept = before.filter((e) => e.kind !== "overflow");
    const bytesBefore = kept.reduce((n, e) => n + JSON.stringify(e).length + 1, 0);
    // Resume: the session hands the history's integrity events, overflow included.
    const after: IntegrityEvent[] = [];
    const resumed = new IntegrityRecorder((e) => after.push(e), before, quota);
    resumed.record(event(999, 900));
    const bytesAfter = after
      .filter((e) => e.kind !== "overflow")
      .reduce((n, e) => n + JSON.stringify(e).length + 1, 0);
    // Before the fix: the resumed recorder appended a new event (and later a second overflow).
    expect(after).toEqual([]);
    expect(bytesBefore + bytesAfter).toBeLessThanOrEqual(quota.bytes);
  });

  it("a resume under the quota keeps counting the bytes already used", () => {
    const before: IntegrityEvent[] = [];
    const first = new IntegrityRecorder((e) => before.push(e), 0, quota);
    for (let i = 0; i < 8; i++) expect(first.record(event(i, 900))).toBe(true);
    const after: IntegrityEvent[] = [];
    const resumed = new IntegrityRecorder((e) => after.push(e), before, quota);
    expect(resumed.record(event(8, 900))).toBe(true);
    // 10 events of about 1,000 bytes do not fit in 10,000 bytes: the tenth is the overflow.
    expect(resumed.record(event(9, 900))).toBe(false);
    expect(after.map((e) => e.kind)).toEqual(["asset_write", "overflow"]);
  });
});
