// Approval with the real daemon (scripted model, labelled scripted; Docker): the site policy
// requires `finish` on every task (the SAMs do not ask for it). Both tasks reach `awaiting approval`
// at once (the daemon keeps running the other task while one waits); the daemon and one waiting
// worker are SIGKILLed; a restarted daemon resumes that run, which takes up its pending request
// again; `scifi status` shows `awaiting approval`; `scifi approve` lets both pass. The site's
// onApproval hook got each request's facts.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pendingApprovals, runApprovals } from "../../runner/approval/store.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { runDir, runFiles } from "../../runner/paths.ts";
import {
  dropFolder,
  fixtureText,
  type Home,
  makeHome,
  type RunningDaemon,
  scifi,
  startDaemon,
  tasksByKey,
  waitFor,
} from "../daemon/harness.ts";
import { hasEngine } from "../helpers/engines.ts";

const started: RunningDaemon[] = [];
const homes: Home[] = [];

afterEach(async () => {
  for (const d of started.splice(0)) {
    if (d.child.exitCode === null && d.child.signalCode === null) {
      d.child.kill("SIGTERM");
      await d.exited;
    }
  }
  for (const h of homes.splice(0)) rmSync(h.root, { recursive: true, force: true });
});

function daemon(h: Home): RunningDaemon {
  const d = startDaemon(h, ["--concurrency", "2"]);
  started.push(d);
  return d;
}

describe.skipIf(!hasEngine("docker"))("approval with the real daemon (scripted agent)", () => {
  it("a site-required finish approval survives SIGKILL of the daemon and the worker, then approval passes both tasks", async () => {
    const h = makeHome();
    homes.push(h);
    const hookLog = join(h.root, "hook.log");
    writeFileSync(
      join(h.home, "site-policy.yaml"),
      `approval:\n  require: [finish]\n  onApproval: 'echo "$SCIFI_RUN_ID $SCIFI_APPROVAL_ID $SCIFI_APPROVAL_ACTION" >> ${hookLog}'\n`,
    );
    const d1 = daemon(h);
    const keys = ["a1", "a2"];
    for (const k of keys) dropFolder(h, k, fixtureText("trivial.md", `approval-${k}`));
    // Both runs wait at once: the daemon went on with the second task while the first waited.
    const waiting = await waitFor("two pending requests", () => {
      const pending = pendingApprovals(h.home);
      return pending.length === 2 ? pending : undefined;
    });
    expect(waiting.map((w) => w.request.action)).toEqual(["finish", "finish"]);
    expect(waiting[0]?.request.why).toBe("the site policy requires approval for 'finish'");
    const status = scifi(h, ["status"]);
    expect(status.stdout.match(/awaiting approval/g)).toHaveLength(2);

    // SIGKILL the daemon, and one worker with it (as a machine-wide kill would).
    d1.child.kill("SIGKILL");
    await d1.exited;
    const tasks = tasksByKey(h);
    const a1 = tasks.get("a1")?.attempts[0];
    expect(a1?.pid).toBeGreaterThan(0);
    process.kill(-(a1?.pid as number), "SIGKILL");
    const a1Request = waiting.find((w) => w.runId === a1?.runId);
    expect(a1Request).toBeDefined();

    const d2 = daemon(h);
    // The resumed run takes up the same request (not a second one) and still waits for a person.
    await waitFor("the a1 run resumed", () => (tasksByKey(h).get("a1")?.attempts[0]?.resumes ?? 0) >= 1);
    await new Promise((r) => setTimeout(r, 3000));
    expect(
      pendingApprovals(h.home)
        .map((p) => p.request.id)
        .sort(),
    ).toEqual(waiting.map((w) => w.request.id).sort());
    expect(scifi(h, ["status"]).stdout.match(/awaiting approval/g)).toHaveLength(2);

    for (const w of waiting) {
      const decided = scifi(h, ["approve", w.runId, w.request.id, "--note", "checked in the morning"]);
      expect(decided.code, decided.stderr).toBe(0);
    }
    await waitFor("both to pass", () => keys.every((k) => tasksByKey(h).get(k)?.state === "passed"), 240_000);
    for (const w of waiting) {
      expect(runApprovals(h.home, w.runId)).toHaveLength(1);
      const history = readHistory(runFiles(runDir(h.home, w.runId)).history).filter(
        (e) => e.type === "approval",
      );
      // The resumed run's history (cut back to its checkpoint) records the request again, then the decision.
      expect(history.map((e) => e.type === "approval" && e.state)).toEqual(["requested", "approved"]);
      expect(history.at(-1)).toMatchObject({ state: "approved", note: "checked in the morning" });
      const verify = scifi(h, ["audit", "verify", w.runId]);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    }
    expect(existsSync(hookLog)).toBe(true);
    const hook = readFileSync(hookLog, "utf8");
    for (const w of waiting) expect(hook).toContain(`${w.runId} ${w.request.id} finish`);
    expect(d2.log()).not.toContain('"event":"start","task":"a1"');
  }, 360_000);

  it("with --concurrency 1 a waiting run holds no slot, and `run` is asked by the daemon before any worker starts", async () => {
    const h = makeHome();
    homes.push(h);
    const d = startDaemon(h, ["--concurrency", "1"]);
    started.push(d);
    const withApproval = (name: string, actions: string) =>
      fixtureText("trivial.md", name).replace("budget_usd: 1", `budget_usd: 1\napproval: [${actions}]`);
    dropFolder(h, "a", withApproval("slot-a", "finish"));
    const finish = await waitFor("a's finish request", () =>
      pendingApprovals(h.home).find((p) => p.request.action === "finish"),
    );
    dropFolder(h, "c", withApproval("slot-c", "run"));
    const run = await waitFor("c's run request", () =>
      pendingApprovals(h.home).find((p) => p.request.action === "run"),
    );
    // c waits queued, with no attempt and no worker: the daemon asked, nothing started.
    expect(tasksByKey(h).get("c")).toMatchObject({ state: "queued", attempts: [] });
    expect(run.request.why).toBe("the task's SAM asks for approval of 'run'");
    dropFolder(h, "b", fixtureText("trivial.md", "slot-b"));
    // b runs and passes while a's worker waits for a person (one slot, not taken by the waiting run).
    await waitFor("b to pass", () => tasksByKey(h).get("b")?.state === "passed", 180_000);
    expect(tasksByKey(h).get("a")?.state).toBe("running");
    const status = scifi(h, ["status"]).stdout.replace(/\n {2}\+ /g, ""); // folded rows joined back
    expect(status.match(/awaiting approval/g), status).toHaveLength(2);
    expect(status).toContain(run.request.id);

    // Approved, c starts under the run id its request was made in, and does not ask again.
    expect(scifi(h, ["approve", run.runId, run.request.id]).code).toBe(0);
    await waitFor("c to pass", () => tasksByKey(h).get("c")?.state === "passed", 180_000);
    expect(tasksByKey(h).get("c")?.attempts[0]?.runId).toBe(run.runId);
    expect(runApprovals(h.home, run.runId)).toHaveLength(1);
    expect(tasksByKey(h).get("a")?.state).toBe("running");
    expect(scifi(h, ["approve", finish.runId, finish.request.id]).code).toBe(0);
    await waitFor("a to pass", () => tasksByKey(h).get("a")?.state === "passed", 180_000);
  }, 480_000);

  it("a `run` request the daemon asked survives a SIGKILL of the daemon; the next one takes it up, then starts the run", async () => {
    const h = makeHome();
    homes.push(h);
    const d1 = startDaemon(h, ["--concurrency", "1"]);
    started.push(d1);
    dropFolder(
      h,
      "k",
      fixtureText("trivial.md", "kill-k").replace("budget_usd: 1", "budget_usd: 1\napproval: [run]"),
    );
    const run = await waitFor("k's run request", () => pendingApprovals(h.home)[0]);
    d1.child.kill("SIGKILL");
    await d1.exited;
    const d2 = startDaemon(h, ["--concurrency", "1"]);
    started.push(d2);
    await waitFor("the new daemon", () => d2.log().includes("awaiting_approval"));
    expect(pendingApprovals(h.home).map((p) => p.request.id)).toEqual([run.request.id]);
    expect(scifi(h, ["approve", run.runId, run.request.id]).code).toBe(0);
    await waitFor("k to pass", () => tasksByKey(h).get("k")?.state === "passed", 180_000);
    expect(
      tasksByKey(h)
        .get("k")
        ?.attempts.map((a) => a.runId),
    ).toEqual([run.runId]);
    expect(runApprovals(h.home, run.runId)).toHaveLength(1);
  }, 300_000);

  it("a `run` request the daemon asked, denied: the task ends blocked and no worker ever started", async () => {
    const h = makeHome();
    homes.push(h);
    const d = startDaemon(h, ["--concurrency", "1"]);
    started.push(d);
    dropFolder(
      h,
      "c",
      fixtureText("trivial.md", "deny-c").replace("budget_usd: 1", "budget_usd: 1\napproval: [run]"),
    );
    const run = await waitFor("c's run request", () => pendingApprovals(h.home)[0]);
    expect(scifi(h, ["deny", run.runId, run.request.id, "--reason", "not tonight"]).code).toBe(0);
    const c = await waitFor("c blocked", () => {
      const t = tasksByKey(h).get("c");
      return t?.state === "blocked" ? t : undefined;
    });
    expect(c.reason).toContain("not tonight");
    expect(c.attempts).toEqual([]);
    expect(existsSync(join(h.inbox, "c", "out.txt"))).toBe(false);
  }, 180_000);
});
