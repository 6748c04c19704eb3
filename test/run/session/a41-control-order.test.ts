// Attack on issue 41's `scifi ctl` decisions (runner/run/session/control.ts), found by attacker a41. Failed before fix-41a (now passes).
// Doc promise: docs/ctl.md: a decision works "from another shell or from another machine that
// shares the run folder"; `scifi ctl` prints "the run applies it within a second"; the process
// driving the run "applies each new decision in order".
// What happened: a decision's file name starts with the writer's Date.now(), and the run takes as
// new only names sorting after the last one it applied (state.controlApplied). A decision whose
// name sorts earlier is never applied and never recorded, though `ctl` said it would be:
// - another machine sharing the run folder whose clock is a few seconds behind the runner's host;
// - the same host after an NTP step back;
// - two `scifi ctl` on one host: each takes Date.now() before its temp file, fsync and rename; the
//   one that took its time first but renamed last lands after the run applied the other.
// Here: one decision applied (raise usd to 2), then one named a second earlier (usd to 5) appears.
// Suggested fix: take as new every well-formed name not applied yet (keep the set of applied names,
// or the folder's names at each poll, in state.json), applying new ones in name order; or let the
// run, not the writer, order them (e.g. an append-only log under an exclusive lock).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { HistoryTape, readHistory } from "../../../runner/memory/history.ts";
import { RunControl } from "../../../runner/run/session/control.ts";
import { DEFAULT_LIMITS, runLimits } from "../../../runner/run/session/limits.ts";
import type { RunState } from "../../../runner/run-folder/state.ts";

it("a41: a decision whose name sorts before the last applied one is still applied", () => {
  const dir = mkdtempSync(join(tmpdir(), "a41-order-"));
  const controlDir = join(dir, "control");
  mkdirSync(controlDir);
  const config = { ...DEFAULT_LIMITS, usd: 1 };
  const limits = runLimits(config, { tokens: 0, usd: 0, elapsedMs: 0 });
  const history = new HistoryTape(join(dir, "history.jsonl"));
  const state = { iteration: 1, attempts: { root: 1 }, limits: config } as unknown as RunState;
  const control = new RunControl(controlDir, state, history, limits);
  const decision = (usd: number, by: string) =>
    JSON.stringify({ action: "limits", at: new Date().toISOString(), by, limits: { usd } });

  const now = Date.now();
  writeFileSync(
    join(controlDir, `${String(now).padStart(15, "0")}-aaaaaaaa-limits.json`),
    decision(2, "a@fast"),
  );
  control.poll();
  expect(config.usd).toBe(2);
  // Written after that poll by a host whose clock is one second behind.
  writeFileSync(
    join(controlDir, `${String(now - 1000).padStart(15, "0")}-bbbbbbbb-limits.json`),
    decision(5, "b@slow"),
  );
  control.poll();
  expect(config.usd).toBe(5);
  expect(readHistory(join(dir, "history.jsonl")).filter((e) => e.type === "control")).toHaveLength(2);
});

it("a41 (fixed): a run whose state.json kept only the last name (older runs) applies only later ones", () => {
  const dir = mkdtempSync(join(tmpdir(), "a41-order-old-"));
  const controlDir = join(dir, "control");
  mkdirSync(controlDir);
  const config = { ...DEFAULT_LIMITS, usd: 1 };
  const limits = runLimits(config, { tokens: 0, usd: 0, elapsedMs: 0 });
  const history = new HistoryTape(join(dir, "history.jsonl"));
  const body = (usd: number) => JSON.stringify({ action: "limits", at: "x", by: "a@b", limits: { usd } });
  writeFileSync(join(controlDir, "000001764800000-aaaaaaaa-limits.json"), body(3));
  writeFileSync(join(controlDir, "000001764800009-bbbbbbbb-limits.json"), body(4));
  const state = {
    iteration: 1,
    attempts: { root: 1 },
    limits: config,
    controlApplied: "000001764800000-aaaaaaaa-limits.json",
  } as unknown as RunState;
  new RunControl(controlDir, state, history, limits).poll();
  expect(config.usd).toBe(4);
  expect(state.controlApplied).toEqual([
    "000001764800000-aaaaaaaa-limits.json",
    "000001764800009-bbbbbbbb-limits.json",
  ]);
});
