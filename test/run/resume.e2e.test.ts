// Crash-resume: `scifi run` is SIGKILLed mid-work, `scifi run --resume` finishes the run with a
// fresh sandbox on the same task folder; history, memory and audit are checked line by line.
import { execFile, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTape, verifyTape } from "../../runner/audit/verify.ts";
import { parseEntries } from "../../runner/memory/entries.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { hasEngine } from "../helpers/engines.ts";
import { callCount, ensureImage, fixture, killChild, lines, REPO, waitFor, workspace } from "./harness.ts";

const exec = promisify(execFile);
const orphans: string[] = [];

describe.skipIf(!hasEngine("docker"))("crash-resume", () => {
  beforeAll(() => ensureImage(), 1_800_000);
  afterAll(async () => {
    // Safety net only: the resume must already have removed the killed process's container.
    for (const name of orphans) await exec("docker", ["rm", "-f", name]).catch(() => undefined);
  });

  it("a run killed with SIGKILL mid-work resumes and finishes, with nothing lost or duplicated", async () => {
    const ws = workspace("verilator-counter-debug");
    const env = { ...process.env, SCIFI_HOME: ws.home };
    const scifi = join(REPO, "bin/scifi.js");
    const first = spawn(
      process.execPath,
      [scifi, "run", ws.sam, "--model", `scripted:${fixture("verilator-resume-1.yaml")}`],
      {
        env,
        stdio: "ignore",
      },
    );
    const runDir = await waitFor(() => {
      const runs = existsSync(join(ws.home, "runs")) ? readdirSync(join(ws.home, "runs")) : [];
      return runs[0] ? join(ws.home, "runs", runs[0]) : undefined;
    });
    const runId = runDir.split("/").at(-1) ?? "";
    orphans.push(`scifi-${runId}`);
    // Wait for pre-scan and two work calls on the tape; the third work call hangs.
    await waitFor(() => (callCount(join(runDir, "audit.jsonl")) >= 3 ? true : undefined));
    await new Promise((r) => setTimeout(r, 500));

    // While the first process still drives the run, a resume is refused by name and touches nothing.
    const records = ["state.json", "history.jsonl", "audit.jsonl"].map((f) => join(runDir, f));
    const untouched = records.map((f) => readFileSync(f, "utf8"));
    const owner = JSON.parse(readFileSync(join(runDir, "run.lock"), "utf8")) as { pid: number };
    expect(owner.pid).toBe(first.pid);
    const early = await exec(
      process.execPath,
      [scifi, "run", "--resume", runId, "--model", `scripted:${fixture("verilator-resume-2.yaml")}`],
      { env, timeout: 120_000 },
    ).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(early.code).toBe(1);
    expect(early.stderr).toContain(
      `scifi run: run ${runId} is being driven by another scifi process (pid ${owner.pid} on `,
    );
    expect(early.stderr).not.toContain("records so far");
    expect(records.map((f) => readFileSync(f, "utf8"))).toEqual(untouched);

    await killChild(first);

    const stateBefore = JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as { phase: string };
    expect(stateBefore.phase).toBe("prescan");
    const historyBefore = lines(join(runDir, "history.jsonl"));
    const auditBefore = lines(join(runDir, "audit.jsonl"));

    const resumed = await exec(
      process.execPath,
      [scifi, "run", "--resume", runId, "--model", `scripted:${fixture("verilator-resume-2.yaml")}`],
      { env, timeout: 300_000 },
    ).then(
      (r) => ({ code: 0, stdout: r.stdout }),
      (e: { code: number; stdout: string; stderr: string }) => ({
        code: e.code,
        stdout: `${e.stdout}${e.stderr}`,
      }),
    );
    expect(resumed.stdout).toMatch(/^PASSED/);
    expect(resumed.stdout).toContain(
      `[SCRIPTED model: replies come from ${fixture("verilator-resume-2.yaml")}]`,
    );
    expect(resumed.code).toBe(0);
    // The killed process's stale lock was taken over, and the resume released its own at the end.
    expect(existsSync(join(runDir, "run.lock"))).toBe(false);
    // The killed process's container was removed by the resume (orphan prune), and the resumed
    // run's own sandbox by its stop: nothing of this run is left.
    const left = await exec("docker", ["ps", "-aq", "--filter", `name=scifi-${runId}`]);
    expect(left.stdout.trim()).toBe("");

    // History: the lines up to the last checkpoint are kept byte for byte, then continue in
    // sequence; of the killed work pass's own events only what the runner blocked comes back (an
    // integrity event: the script's `head` is not on the example's allowlist), after `resumed`.
    const historyAfter = lines(join(runDir, "history.jsonl"));
    const checkpointed = historyBefore.filter((l) => !l.includes('"type":"integrity"'));
    expect(historyAfter.slice(0, checkpointed.length)).toEqual(checkpointed);
    const events = readHistory(join(runDir, "history.jsonl"));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => e.type)).toEqual([
      "run_start",
      "iteration_start",
      "prescan",
      "resumed",
      "integrity",
      "work_end",
      "check",
      "check",
      "check",
      "verdict",
      "node_complete",
      "iteration_end",
      "final_review",
      "run_end",
    ]);
    expect(events[3]).toMatchObject({
      type: "resumed",
      fromPhase: "prescan",
      iteration: 1,
      discardedEvents: 1,
    });
    expect(events[4]).toMatchObject({ type: "integrity", kind: "allowlist_refused" });

    // Audit: the old records unchanged, one chain, a resume event, every call once.
    const auditAfter = lines(join(runDir, "audit.jsonl"));
    expect(auditAfter.slice(0, auditBefore.length)).toEqual(auditBefore);
    expect(verifyTape(join(runDir, "audit.jsonl"))).toMatchObject({ ok: true });
    const tape = readTape(join(runDir, "audit.jsonl"));
    expect(
      tape.map((r) =>
        r.kind === "call" ? `call:${r.role}` : r.kind === "event" ? `event:${r.event}` : r.kind,
      ),
    ).toEqual([
      "call:prescan",
      "call:work",
      // The allowlist's refusal of that call, marked on the tape (docs/integrity.md).
      "event:integrity",
      "call:work",
      "event:resumed",
      "call:work",
      "call:work",
      "call:review",
      // A scripted model without tracer replies: the critique is skipped, on the record.
      "event:critique_skipped",
      "call:final_review",
      // The tape's closing record (scifi export refuses a tape without it).
      "event:run_end",
    ]);

    // Memory: one entry each in group memory and the global proposals (global memory itself is
    // written only by `scifi memory accept`); the task folder holds the fix.
    const group = parseEntries(readFileSync(join(ws.home, "memory/groups/rtl-debugging.md"), "utf8"));
    const global = parseEntries(readFileSync(join(ws.home, "memory/global.proposed.md"), "utf8"));
    expect(group.map((e) => e.id)).toEqual([`${runId}/final/group`]);
    expect(global.map((e) => e.id)).toEqual([`${runId}/final/global`]);
    expect(readFileSync(join(ws.taskDir, "rtl/counter.v"), "utf8")).toContain("WIDTH'(N - 1);");

    // Resuming a finished run changes nothing.
    const again = await exec(
      process.execPath,
      [scifi, "run", "--resume", runId, "--model", `scripted:${fixture("verilator-resume-2.yaml")}`],
      { env },
    );
    expect(again.stdout).toMatch(/^PASSED/);
    expect(lines(join(runDir, "history.jsonl"))).toEqual(historyAfter);
    expect(lines(join(runDir, "audit.jsonl"))).toEqual(auditAfter);
  }, 900_000);
});

describe.skipIf(!hasEngine("docker"))("signals", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("SIGTERM mid-work stops the sandbox and leaves a resumable checkpoint", async () => {
    const ws = workspace("verilator-counter-debug");
    const child = spawn(
      process.execPath,
      [
        join(REPO, "bin/scifi.js"),
        "run",
        ws.sam,
        "--model",
        `scripted:${fixture("verilator-resume-1.yaml")}`,
      ],
      { env: { ...process.env, SCIFI_HOME: ws.home }, stdio: "ignore" },
    );
    const runDir = await waitFor(() => {
      const runs = existsSync(join(ws.home, "runs")) ? readdirSync(join(ws.home, "runs")) : [];
      return runs[0] ? join(ws.home, "runs", runs[0]) : undefined;
    });
    const runId = runDir.split("/").at(-1) ?? "";
    await waitFor(() => (callCount(join(runDir, "audit.jsonl")) >= 3 ? true : undefined));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(143);
    const { stdout } = await exec("docker", [
      "ps",
      "-a",
      "--filter",
      `name=scifi-${runId}`, // every sandbox of the run: scifi-<runId>-<phase><iteration>
      "--format",
      "{{.Names}}",
    ]);
    expect(stdout.trim()).toBe("");
    const state = JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as { phase: string };
    expect(state.phase).toBe("prescan");
  }, 600_000);
});
