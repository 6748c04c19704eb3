// Daemon pieces without an engine: which inbox paths are tasks, the lock, validation reports,
// today's spend, the site policy keys the daemon reads, offline cancel/retry, structured logs.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { newRecord } from "../../runner/daemon/control.ts";
import { Daemon } from "../../runner/daemon/daemon.ts";
import { entryOf, rejectedFile, scanInbox } from "../../runner/daemon/inbox.ts";
import { acquireLock, DaemonLocked } from "../../runner/daemon/lock.ts";
import { createLogger } from "../../runner/daemon/log.ts";
import { operate } from "../../runner/daemon/operator.ts";
import { plan } from "../../runner/daemon/queue.ts";
import { daemonPaths, readTask, writeTask } from "../../runner/daemon/records.ts";
import { spentToday } from "../../runner/daemon/spend.ts";
import { parseSitePolicy } from "../../runner/policy/site.ts";
import { fixtureText } from "./harness.ts";

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "scifi-daemon-unit-"));
}

describe("inbox entries", () => {
  const inbox = "/srv/inbox";
  it("takes x.md and x/task.md, nothing else", () => {
    expect(entryOf(inbox, "/srv/inbox/a.md")).toEqual({
      key: "a.md",
      kind: "file",
      source: "/srv/inbox/a.md",
    });
    expect(entryOf(inbox, "/srv/inbox/b/task.md")).toEqual({
      key: "b",
      kind: "folder",
      source: "/srv/inbox/b/task.md",
    });
    for (const path of [
      "/srv/inbox/a.md.tmp",
      "/srv/inbox/.a.md",
      "/srv/inbox/a.md~",
      "/srv/inbox/a.rejected.txt",
      "/srv/inbox/b/notes.md",
      "/srv/inbox/b/sub/task.md",
      "/srv/inbox/.hidden/task.md",
      "/srv/other.md",
    ])
      expect(entryOf(inbox, path), path).toBeUndefined();
  });

  it("rescans a real folder and names the rejection report next to the SAM", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "a.md"), "x");
    writeFileSync(join(dir, "a.md.tmp"), "x");
    mkdirSync(join(dir, "b"));
    writeFileSync(join(dir, "b", "task.md"), "x");
    mkdirSync(join(dir, "empty"));
    expect(
      scanInbox(dir)
        .map((e) => e.key)
        .sort(),
    ).toEqual(["a.md", "b"]);
    expect(rejectedFile(join(dir, "b", "task.md"))).toBe(join(dir, "b", "task.rejected.txt"));
  });
});

describe("daemon lock", () => {
  it("refuses a second owner by pid, takes over a lock whose pid is dead", () => {
    const dir = tempDir();
    const file = join(dir, "daemon.lock");
    const first = acquireLock(file, "/inbox");
    expect(() => acquireLock(file, "/inbox")).toThrow(DaemonLocked);
    expect(() => acquireLock(file, "/inbox")).toThrow(`pid ${process.pid}`);
    first.release();
    // A pid that cannot exist (above pid_max): stale.
    writeFileSync(file, JSON.stringify({ pid: 2 ** 30, host: hostname(), inbox: "/inbox", startedAt: "x" }));
    const second = acquireLock(file, "/inbox");
    expect(second.stale?.pid).toBe(2 ** 30);
    expect(JSON.parse(readFileSync(file, "utf8")).pid).toBe(process.pid);
    second.release();
  });
});

describe("records", () => {
  it("an invalid SAM is rejected with every diagnostic written next to it", () => {
    const home = tempDir();
    const inbox = join(home, "tasks");
    mkdirSync(inbox);
    const source = join(inbox, "bad.md");
    const text = fixtureText("invalid-unknown-key.md");
    writeFileSync(source, text);
    const record = newRecord(home, { key: "bad.md", kind: "file", source });
    expect(record.state).toBe("rejected");
    expect(record.reason).toContain("budgett_usd");
    expect(readFileSync(join(inbox, "bad.rejected.txt"), "utf8")).toContain("did you mean `budget_usd`?");
    expect(readFileSync(source, "utf8")).toBe(text);
  });

  it("a valid SAM is queued with its hash, GPUs and budget", () => {
    const home = tempDir();
    const source = join(home, "ok.md");
    writeFileSync(source, fixtureText("trivial.md"));
    const record = newRecord(home, { key: "ok.md", kind: "file", source });
    expect(record).toMatchObject({ state: "queued", name: "daemon-trivial", gpus: 0, budgetUsd: 1 });
    expect(record.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(record.samFile).toBe(join(daemonPaths(home).work("ok.md"), "task.md"));
  });

  it("sums today's spend from the runs' checkpoints, not yesterday's", () => {
    const home = tempDir();
    const state = (id: string, usd: number) => {
      mkdirSync(join(home, "runs", id), { recursive: true });
      writeFileSync(join(home, "runs", id, "state.json"), JSON.stringify({ spent: { usd } }));
    };
    state("r1", 0.5);
    state("r2", 0.25);
    state("old", 9);
    const source = join(home, "ok.md");
    writeFileSync(source, fixtureText("trivial.md"));
    const record = newRecord(home, { key: "ok.md", kind: "file", source });
    const now = new Date("2026-11-30T12:00:00Z");
    record.attempts = [
      { n: 1, runId: "old", startedAt: "2026-11-29T23:59:00Z", resumes: 0 },
      { n: 2, runId: "r1", startedAt: "2026-11-30T01:00:00Z", resumes: 0 },
      { n: 3, runId: "r2", startedAt: "2026-11-30T02:00:00Z", resumes: 0 },
    ];
    expect(spentToday(home, [record], now)).toBe(0.75);
  });

  it("with no daemon running, cancel and retry change the status file directly", async () => {
    const home = tempDir();
    const source = join(home, "ok.md");
    writeFileSync(source, fixtureText("trivial.md"));
    writeTask(home, newRecord(home, { key: "ok.md", kind: "file", source }));
    const cancelled = await operate(home, source, "cancel");
    expect(cancelled).toMatchObject({ via: "direct", record: { state: "cancelled" } });
    await expect(operate(home, "ok.md", "cancel")).rejects.toThrow("already ended (cancelled)");
    await operate(home, "ok.md", "retry");
    expect(readTask(home, "ok.md")?.state).toBe("queued");
    await expect(operate(home, "ok.md", "retry")).rejects.toThrow("retry applies to a task that ended");
  });
});

describe("site policy keys for the daemon", () => {
  it("reads totalGpus, usdPerDay and onFinish, and refuses bad values", () => {
    const policy = parseSitePolicy("totalGpus: 2\nusdPerDay: 25\nonFinish: 'echo done'\n", "site.yaml");
    expect(policy).toMatchObject({ totalGpus: 2, usdPerDay: 25, onFinish: "echo done" });
    expect(() => parseSitePolicy("usdPerDay: -1\n", "site.yaml")).toThrow(/usdPerDay/);
    expect(parseSitePolicy("", "site.yaml").usdPerDay).toBeUndefined();
  });
});

describe("structured log", () => {
  it("writes one JSON object a line, or text with quoted values", () => {
    const lines: string[] = [];
    createLogger("json", (l) => lines.push(l))("start", { task: "a b.md", pid: 7 });
    createLogger("text", (l) => lines.push(l))("start", { task: "a b.md", pid: 7 });
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({ event: "start", task: "a b.md", pid: 7 });
    expect(lines[1]).toMatch(/^\S+Z start task="a b.md" pid=7\n$/);
  });
});

describe("queue plan", () => {
  const task = (key: string, minute: number, gpus = 0, budgetUsd = 1) => ({
    key,
    gpus,
    budgetUsd,
    queuedAt: `2026-11-30T08:${String(minute).padStart(2, "0")}:00Z`,
  });

  it("starts in FIFO order up to the free slots", () => {
    const decisions = plan([task("c", 3), task("a", 1), task("b", 2)], {
      slots: 2,
      totalGpus: 0,
      usedGpus: 0,
    });
    expect(decisions).toEqual([
      { key: "a", action: "start" },
      { key: "b", action: "start" },
    ]);
  });

  it("a GPU task waits for a free GPU while CPU tasks behind it start; too many GPUs is rejected", () => {
    const decisions = plan([task("gpu", 1, 1), task("cpu", 2), task("huge", 3, 4)], {
      slots: 3,
      totalGpus: 2,
      usedGpus: 2,
    });
    expect(decisions).toEqual([
      { key: "gpu", action: "wait", for: "gpu", detail: "needs 1, 0 free" },
      { key: "cpu", action: "start" },
      expect.objectContaining({
        key: "huge",
        action: "reject",
        reason: expect.stringContaining("asks for 4 GPU(s); this host has 2"),
      }),
    ]);
    expect(plan([task("gpu", 1, 1), task("gpu2", 2, 1)], { slots: 3, totalGpus: 1, usedGpus: 0 })).toEqual([
      { key: "gpu", action: "start" },
      { key: "gpu2", action: "wait", for: "gpu", detail: "needs 1, 0 free" },
    ]);
  });

  it("the daily USD limit: a started task reserves its budget; one over the whole limit is rejected", () => {
    const decisions = plan(
      [task("a", 1, 0, 2), task("b", 2, 0, 2), task("c", 3, 0, 0.5), task("d", 4, 0, 50)],
      {
        slots: 4,
        totalGpus: 0,
        usedGpus: 0,
        usdLeft: 3,
        usdPerDay: 10,
      },
    );
    expect(decisions.map((d) => [d.key, d.action])).toEqual([
      ["a", "start"],
      ["b", "wait"],
      ["c", "start"],
      ["d", "reject"],
    ]);
  });
});

describe("daemon recovery without an engine", () => {
  it("a task left running whose worker ended meanwhile gets the run's outcome; nothing is started", async () => {
    const home = tempDir();
    mkdirSync(join(home, "tasks"));
    const source = join(home, "tasks", "done.md");
    writeFileSync(source, fixtureText("trivial.md"));
    const record = newRecord(home, { key: "done.md", kind: "file", source });
    record.state = "running";
    record.attempts = [
      { n: 1, runId: "r-done", startedAt: new Date().toISOString(), pid: 2 ** 30, resumes: 0 },
    ];
    writeTask(home, record);
    mkdirSync(join(home, "runs", "r-done"), { recursive: true });
    writeFileSync(
      join(home, "runs", "r-done", "state.json"),
      JSON.stringify({
        phase: "ended",
        iteration: 1,
        outcome: { status: "passed", reason: "all checks passed" },
        spent: { usd: 0, tokens: 0 },
      }),
    );
    const log: { event: string; [k: string]: unknown }[] = [];
    const daemon = new Daemon({
      home,
      model: "scripted:/dev/null",
      backend: "no-such-backend", // prune fails and is logged; nothing here needs a sandbox
      settleMs: 50,
      log: (event, fields) => log.push({ event, ...fields }),
    });
    await daemon.start();
    const deadline = Date.now() + 10_000;
    while (readTask(home, "done.md")?.state === "running" && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    await daemon.stop();
    expect(readTask(home, "done.md")).toMatchObject({ state: "passed", reason: "all checks passed" });
    expect(log.map((e) => e.event)).toContain("end");
    expect(log.map((e) => e.event)).not.toContain("start");
    expect(log.find((e) => e.event === "prune_failed")?.error).toContain(
      "unknown sandbox backend 'no-such-backend'",
    );
  });

  it("refuses to start without a model or without the inbox, saying what to do", async () => {
    const home = tempDir();
    await expect(new Daemon({ home, model: "scripted:/dev/null" }).start()).rejects.toThrow(
      /inbox .* does not exist; create it/,
    );
    mkdirSync(join(home, "tasks"));
    await expect(new Daemon({ home }).start()).rejects.toThrow(
      /no model: pass --model SPEC or --models-config FILE/,
    );
  });
});
