// Attack on issue 41's `scifi ctl` decisions (runner/run/session/control.ts readDecisions), found by
// attacker a41. Failed before fix-41a (now passes).
// Doc promise: docs/ctl.md "How it works": each decision is one file "written whole: temp file,
// fsync, rename ... never rewritten"; the process driving the run polls control/ every second
// and "applies each new decision"; readDecisions: "torn or foreign files skipped".
// What happened: readDecisions reads every name that looks like a decision with readFileSync,
// following links and opening whatever is there:
// - a FIFO named like a decision (mkfifo by the run's user, a tool, a script gone wrong) blocks
//   the open forever; the read is synchronous, so the whole runner process freezes: no poll, no
//   deadline timer, no model call; a JavaScript signal handler (scifi run's SIGTERM/SIGINT ending)
//   cannot run while the main thread is blocked in a synchronous read. Here a child process polling such a
//   folder is still stuck after 5 s.
// - a symbolic link named like a decision is followed: a decision "never rewritten" is whatever
//   the link's target holds now, e.g. a file in a task folder the agent writes (/task), which
//   then raises the agent's own budget.
// - a `control` that is a file, not a folder (`touch runs/<id>/control`, a sync tool): readdirSync
//   throws ENOTDIR out of poll, which (from the timer) is uncaught: the run's process dies, and
//   every resume dies on it again (see test/attack/a41-garbage-live.e2e.test.ts for that path).
// Suggested fix: never throw from poll (a control/ that is no folder: refuse on the history once);
// open each name with O_NOFOLLOW | O_NONBLOCK, fstat it and skip (and record as
// refused) anything that is not a regular file with one link, owned by the run's user.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readDecisions } from "../../../runner/run/session/control.ts";
import { REPO } from "../harness.ts";

describe("a41: a control/ entry that is no regular file", () => {
  it("a FIFO named like a decision does not freeze the poll", () => {
    const dir = mkdtempSync(join(tmpdir(), "a41-fifo-"));
    const controlDir = join(dir, "control");
    mkdirSync(controlDir);
    spawnSync("mkfifo", [join(controlDir, "000001764800000-0123abcd-pause.json")]);
    const script = `import { readDecisions } from ${JSON.stringify(join(REPO, "runner/run/session/control.ts"))};
      console.log(JSON.stringify(readDecisions(${JSON.stringify(controlDir)}, undefined)));`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 5000,
    });
    // Timed out (SIGTERM from spawnSync) today: the read blocks forever.
    expect(child.signal).toBeNull();
    expect(child.stdout.trim()).toBe("[]");
  });

  it("a link named like a decision is not followed", () => {
    const dir = mkdtempSync(join(tmpdir(), "a41-link-"));
    const controlDir = join(dir, "control");
    const agentWritable = join(dir, "task");
    mkdirSync(controlDir);
    mkdirSync(agentWritable);
    const target = join(agentWritable, "notes.json");
    writeFileSync(target, JSON.stringify({ action: "limits", at: "x", by: "agent", limits: { usd: 1000 } }));
    symlinkSync(target, join(controlDir, "000001764800000-0123abcd-limits.json"));
    expect(readDecisions(controlDir, undefined)).toEqual([]);
  });

  it("a control/ that is a file is not a crash", () => {
    const dir = mkdtempSync(join(tmpdir(), "a41-notdir-"));
    writeFileSync(join(dir, "control"), "");
    expect(() => readDecisions(join(dir, "control"), undefined)).not.toThrow();
  });
});

describe("a41 (fixed): the run's poll records what it skipped, once, and goes on", () => {
  it("a FIFO and a link are refused on the history by name; a control/ file is recorded once", async () => {
    const { HistoryTape, readHistory } = await import("../../../runner/memory/history.ts");
    const { RunControl } = await import("../../../runner/run/session/control.ts");
    const { DEFAULT_LIMITS, runLimits } = await import("../../../runner/run/session/limits.ts");
    const dir = mkdtempSync(join(tmpdir(), "a41-skip-"));
    const controlDir = join(dir, "control");
    mkdirSync(controlDir);
    spawnSync("mkfifo", [join(controlDir, "000001764800000-0123abcd-pause.json")]);
    writeFileSync(
      join(dir, "elsewhere.json"),
      JSON.stringify({ action: "limits", at: "x", by: "x", limits: { usd: 9 } }),
    );
    symlinkSync(join(dir, "elsewhere.json"), join(controlDir, "000001764800001-0123abcd-limits.json"));
    const config = { ...DEFAULT_LIMITS, usd: 1 };
    const limits = runLimits(config, { tokens: 0, usd: 0, elapsedMs: 0 });
    const state = { iteration: 1, attempts: { root: 1 }, limits: config } as never;
    const control = new RunControl(controlDir, state, new HistoryTape(join(dir, "h.jsonl")), limits);
    control.poll();
    control.poll();
    expect(config.usd).toBe(1);
    expect(limits.stop.pauseRequested).toBeUndefined();
    const events = readHistory(join(dir, "h.jsonl")).filter((e) => e.type === "control");
    expect(events).toMatchObject([
      { action: "pause", decision: "000001764800000-0123abcd-pause.json", refused: "is not a regular file" },
      {
        action: "limits",
        decision: "000001764800001-0123abcd-limits.json",
        refused: "is a symbolic link, not a decision file",
      },
    ]);

    const other = mkdtempSync(join(tmpdir(), "a41-notdir-run-"));
    writeFileSync(join(other, "control"), "");
    const again = new RunControl(
      join(other, "control"),
      state,
      new HistoryTape(join(other, "h.jsonl")),
      limits,
    );
    expect(() => {
      again.poll();
      again.poll();
    }).not.toThrow();
    expect(readHistory(join(other, "h.jsonl"))).toMatchObject([
      { type: "control", action: "folder", refused: expect.stringContaining("is not a folder") },
    ]);
  });
});
