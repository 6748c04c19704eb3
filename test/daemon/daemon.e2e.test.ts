// The daemon end to end: real `scifi daemon` processes, real Docker sandboxes, a scripted model
// (labelled: no real LLM). Ten SAMs at concurrency 3; SIGKILL while three run; a second daemon.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseEntries } from "../../runner/memory/entries.ts";
import { runDir, runFiles } from "../../runner/paths.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import {
  containersOf,
  dropFile,
  dropFolder,
  events,
  fixtureText,
  type Home,
  makeHome,
  type RunningDaemon,
  scifi,
  startDaemon,
  stopDaemons,
  tasksByKey,
  waitFor,
} from "./harness.ts";

const trivial = (n: string) => fixtureText("trivial.md", `daemon-${n}`);
const started: RunningDaemon[] = [];

function daemon(h: Home, args: string[] = []): RunningDaemon {
  const d = startDaemon(h, args);
  started.push(d);
  return d;
}

afterEach(() => stopDaemons(started));

function allEnded(h: Home, keys: string[]): boolean {
  const tasks = tasksByKey(h);
  return keys.every((k) =>
    ["passed", "failed", "blocked", "rejected", "cancelled"].includes(tasks.get(k)?.state ?? ""),
  );
}

/** Every history line parses (none torn) and none repeats; memory entries have unique ids. */
function recordsIntact(home: string, runId: string): void {
  const files = runFiles(runDir(home, runId));
  const history = readFileSync(files.history, "utf8");
  expect(history.endsWith("\n")).toBe(true);
  const lines = history.split("\n").filter(Boolean);
  for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  expect(new Set(lines).size).toBe(lines.length);
  for (const file of [
    files.memory,
    join(home, "memory", "global.md"),
    join(home, "memory", "global.proposed.md"),
  ]) {
    if (!existsSync(file)) continue;
    const entries = parseEntries(readFileSync(file, "utf8"));
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
    for (const entry of entries) expect(entry.title).not.toBe("");
  }
}

describe.skipIf(!hasEngine("docker"))("scifi daemon (Docker, scripted model)", () => {
  beforeAll(() => ensureImage());

  it("runs ten dropped SAMs at concurrency 3: valid pass, invalid rejected, the edited one fails as tampering", async () => {
    const h = makeHome();
    const d = daemon(h, ["--concurrency", "3"]);
    await waitFor("daemon start", () => events(d.log()).some((e) => e.event === "daemon_start"), 30_000);
    // The tampering task is slow (its step pauses), so the test edits its SAM while it runs.
    const tamperSam = dropFolder(h, "tamper", trivial("tamper"), { slow: true });
    const files = ["v1.md", "v2.md", "v3.md", "v4.md"];
    for (const k of files) dropFile(h, k, trivial(k));
    const folders = ["f1", "f2", "f3"];
    for (const k of folders) dropFolder(h, k, trivial(k));
    const valid = [...files, ...folders];
    const badKey = fixtureText("invalid-unknown-key.md");
    const badExpect = fixtureText("invalid-no-expectation.md");
    dropFile(h, "bad-key.md", badKey);
    dropFile(h, "bad-expect.md", badExpect);

    const tamperRun = await waitFor("the tampering task's run to start", () => {
      const attempt = tasksByKey(h).get("tamper")?.attempts[0];
      return attempt && existsSync(runFiles(runDir(h.home, attempt.runId)).state) ? attempt.runId : undefined;
    });
    writeFileSync(tamperSam, `${readFileSync(tamperSam, "utf8")}\n- Also: nothing at all.\n`);

    const keys = [...valid, "tamper", "bad-key.md", "bad-expect.md"];
    await waitFor("all ten tasks to end", () => allEnded(h, keys), 300_000);
    const tasks = tasksByKey(h);
    for (const k of valid) expect(tasks.get(k)?.state, `${k}: ${tasks.get(k)?.reason}`).toBe("passed");
    // Each daemon run wrote its report (with the Changes section) when it ended.
    for (const k of valid) {
      const run = tasks.get(k)?.attempts.at(-1)?.runId ?? "";
      const page = readFileSync(join(h.home, "runs", run, "report.html"), "utf8");
      expect(page).toContain('id="changes"');
      expect(page).toContain("out.txt");
    }
    expect(existsSync(join(h.inbox, "f1", "out.txt"))).toBe(true);
    expect(existsSync(join(h.home, "daemon", "work", "v1.md", "out.txt"))).toBe(true);

    const tamper = tasks.get("tamper");
    expect(tamper?.state).toBe("failed");
    expect(tamper?.reason).toMatch(/changed during the run.*tampering/);
    expect(tamper?.attempts[0]?.runId).toBe(tamperRun);

    for (const [key, text, diagnostic] of [
      ["bad-key", badKey, "unknown metadata key `budgett_usd`; did you mean `budget_usd`?"],
      ["bad-expect", badExpect, "has no Expectation section"],
    ] as const) {
      expect(tasks.get(`${key}.md`)?.state).toBe("rejected");
      expect(readFileSync(join(h.inbox, `${key}.rejected.txt`), "utf8")).toContain(diagnostic);
      expect(readFileSync(join(h.inbox, `${key}.md`), "utf8")).toBe(text); // the SAM is untouched
      expect(tasks.get(`${key}.md`)?.attempts).toEqual([]);
    }

    // Never more than three at once: count starts and ends in log order.
    let running = 0;
    let peak = 0;
    for (const e of events(d.log())) {
      if (e.event === "start") peak = Math.max(peak, ++running);
      if (e.event === "end") running--;
    }
    expect(peak).toBe(3);

    const status = scifi(h, ["status", "--json"]);
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout) as {
      daemon: { pid: number };
      tasks: { task: string; state: string; run?: string; iteration?: number }[];
    };
    expect(report.daemon.pid).toBe(d.pid);
    expect(report.tasks.map((t) => t.task).sort()).toEqual([...keys].sort());
    for (const row of report.tasks) {
      const record = tasks.get(row.task);
      expect(row.state).toBe(record?.state);
      expect(row.run).toBe(record?.attempts.at(-1)?.runId);
      if (row.state === "passed") expect(row.iteration).toBe(1);
    }
    const runIds = [...tasks.values()].flatMap((t) => t.attempts.map((a) => a.runId));
    expect(containersOf(runIds)).toEqual([]);
  }, 420_000);

  it("SIGKILL while three run: on restart live workers are adopted, a dead one resumes, all pass once", async () => {
    const h = makeHome();
    const d1 = daemon(h, ["--concurrency", "3"]);
    const keys = ["k1", "k2", "k3"];
    for (const k of keys) dropFolder(h, k, trivial(k), { slow: true });
    const pids = await waitFor("three runs with a checkpoint", () => {
      const tasks = tasksByKey(h);
      const ready = keys
        .map((k) => tasks.get(k)?.attempts[0])
        .filter((a) => a?.pid && existsSync(runFiles(runDir(h.home, a.runId)).state));
      return ready.length === 3 ? ready.map((a) => a?.pid as number) : undefined;
    });
    d1.child.kill("SIGKILL");
    await d1.exited;
    // A worker that dies with the daemon (as in a machine-wide kill): its run must resume.
    process.kill(-(pids[0] as number), "SIGKILL");

    const second = daemon(h, ["--concurrency", "3"]);
    await waitFor("all three to end", () => allEnded(h, keys), 240_000);
    const tasks = tasksByKey(h);
    for (const k of keys) {
      expect(tasks.get(k)?.state, `${k}: ${tasks.get(k)?.reason}`).toBe("passed");
      expect(tasks.get(k)?.attempts).toHaveLength(1); // one run per task, never a second one
    }
    const log = events(second.log());
    expect(
      log
        .filter((e) => e.event === "adopt")
        .map((e) => e.task)
        .sort(),
    ).toEqual(["k2", "k3"]);
    expect(log.filter((e) => e.event === "resume").map((e) => e.task)).toEqual(["k1"]);
    expect(log.filter((e) => e.event === "start")).toEqual([]);
    expect(tasks.get("k1")?.attempts[0]?.resumes).toBe(1);

    const runIds = keys.map((k) => tasks.get(k)?.attempts[0]?.runId as string);
    for (const runId of runIds) {
      const verify = scifi(h, ["audit", "verify", runId]);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
      recordsIntact(h.home, runId);
    }
    expect(containersOf(runIds)).toEqual([]);
  }, 360_000);

  it("a second daemon on the same inbox refuses, naming the first one's pid; a stale lock is taken over", async () => {
    const h = makeHome();
    const first = daemon(h);
    await waitFor("daemon start", () => events(first.log()).some((e) => e.event === "daemon_start"), 30_000);
    const second = scifi(h, ["daemon", "--model", "scripted:/dev/null"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`another scifi daemon (pid ${first.pid}`);
    expect(second.stderr).toContain(h.inbox);
    // Another home pointed at the same inbox: refused by the inbox's own lock.
    const viaInbox = scifi(makeHome(), ["daemon", "--model", "scripted:/dev/null", "--tasks", h.inbox]);
    expect(viaInbox.code).toBe(1);
    expect(viaInbox.stderr).toContain(`another scifi daemon (pid ${first.pid}`);

    first.child.kill("SIGKILL");
    await first.exited;
    const third = daemon(h);
    const start = await waitFor(
      "restart",
      () => events(third.log()).find((e) => e.event === "daemon_start"),
      30_000,
    );
    expect(start.staleLockPid).toBe(first.pid);
  }, 60_000);

  it("notices edits while queued, cancels, retries, stops on SIGTERM with a checkpoint, runs on_finish", async () => {
    const h = makeHome();
    writeFileSync(
      join(h.home, "site-policy.yaml"),
      `onFinish: 'echo "$SCIFI_TASK $SCIFI_TASK_STATE $SCIFI_RUN_ID" >> ${join(h.root, "hook.out")}'\n`,
    );
    const d = daemon(h, ["--concurrency", "1"]);
    dropFolder(h, "a", trivial("a"), { slow: true });
    await waitFor("a running", () => tasksByKey(h).get("a")?.state === "running");
    const b = dropFile(h, "b.md", trivial("b"));
    const queued = await waitFor(
      "b queued",
      () => tasksByKey(h).get("b.md")?.state === "queued" && tasksByKey(h).get("b.md"),
    );

    // Edited while queued: re-validated and re-queued with the new hash.
    writeFileSync(b, trivial("b").replace("# A trivial task", "# A trivial task, edited"));
    await waitFor("b re-queued", () => tasksByKey(h).get("b.md")?.sha256 !== queued.sha256);
    expect(tasksByKey(h).get("b.md")?.state).toBe("queued");
    // Edited into an invalid SAM: rejected with diagnostics; fixed again: queued, the report removed.
    writeFileSync(b, trivial("b").replace("iterations: 2", "iterationz: 2"));
    await waitFor("b rejected", () => tasksByKey(h).get("b.md")?.state === "rejected");
    expect(readFileSync(join(h.inbox, "b.rejected.txt"), "utf8")).toContain("did you mean `iterations`?");
    writeFileSync(b, trivial("b"));
    await waitFor("b queued again", () => tasksByKey(h).get("b.md")?.state === "queued");
    expect(existsSync(join(h.inbox, "b.rejected.txt"))).toBe(false);

    const cancelB = scifi(h, ["cancel", "b.md"]);
    expect(cancelB.stdout).toMatch(/^b\.md: cancelled/);
    const cancelA = scifi(h, ["cancel", join(h.inbox, "a", "task.md")]);
    expect(cancelA.code, cancelA.stderr).toBe(0);
    expect(cancelA.stdout).toMatch(/^a: cancelled/);
    const again = scifi(h, ["cancel", "a"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("already ended (cancelled)");
    const unknown = scifi(h, ["retry", "nope"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("known tasks: a, b.md");

    expect(scifi(h, ["retry", "b.md"]).code).toBe(0);
    await waitFor("b passed", () => tasksByKey(h).get("b.md")?.state === "passed");

    // SIGTERM while c runs: exit 0, c waits to resume from its checkpoint, its sandbox is gone.
    dropFolder(h, "c", trivial("c"), { slow: true });
    const cRun = await waitFor("c running with a checkpoint", () => {
      const attempt = tasksByKey(h).get("c")?.attempts[0];
      return attempt && existsSync(runFiles(runDir(h.home, attempt.runId)).state) ? attempt.runId : undefined;
    });
    d.child.kill("SIGTERM");
    expect(await d.exited).toBe(0);
    const c = tasksByKey(h).get("c");
    expect(c?.state).toBe("queued");
    expect(c?.resumeRunId).toBe(cRun);
    expect(containersOf([cRun])).toEqual([]);

    daemon(h, ["--concurrency", "1"]);
    await waitFor("c passed", () => tasksByKey(h).get("c")?.state === "passed");
    expect(tasksByKey(h).get("c")?.attempts).toHaveLength(1);
    const hook = await waitFor(
      "hook output",
      () => {
        const file = join(h.root, "hook.out");
        return (
          existsSync(file) &&
          readFileSync(file, "utf8").includes(`c passed ${cRun}`) &&
          readFileSync(file, "utf8")
        );
      },
      20_000,
    );
    expect(hook).toContain("a cancelled");

    // A single-file task edited in the inbox while it runs: the edit reaches the run's copy and
    // the loop fails it as tampering. (`slow` in its work folder makes the scripted step pause.)
    mkdirSync(join(h.home, "daemon", "work", "d.md"), { recursive: true });
    writeFileSync(join(h.home, "daemon", "work", "d.md", "slow"), "");
    const dSam = dropFile(h, "d.md", trivial("d"));
    await waitFor("d running with a checkpoint", () => {
      const attempt = tasksByKey(h).get("d.md")?.attempts[0];
      return attempt && existsSync(runFiles(runDir(h.home, attempt.runId)).state);
    });
    writeFileSync(dSam, `${readFileSync(dSam, "utf8")}\n- Also: nothing.\n`);
    await waitFor("d ended", () => tasksByKey(h).get("d.md")?.state === "failed");
    expect(tasksByKey(h).get("d.md")?.reason).toMatch(/changed during the run.*tampering/);
    expect(hook).toMatch(/b\.md passed \S+/);
  }, 300_000);
});
