// Issue 37 acceptance, "a `finish` request after a ptrace cheat": the iso-checks task under
// `approval: [finish]`. Before each check had a sandbox of its own, a process left by check 1
// ptrace-attached to the next verifier and forged its exit status, and the person was shown only
// `PASS root/check-1, PASS root/check-2` and approved. Now:
// - the cheat (the mean still wrong; iso-cross-check.yaml) fails on the verifiers' own status and
//   no finish request is ever made: a person is never asked to confirm a run that did not pass;
// - the probe (the mean fixed, and a process left by check 1 that rewrites every later verifier's
//   exit status to 7; iso-fixed-lurker.yaml) reaches the request, which shows each check's true exit
//   code and the verifier's own output: the ptrace could not happen.
// Run on Docker (test/run/checks/finish-after-ptrace.e2e.test.ts) and Apptainer
// (test/sandbox/apptainer/finish-after-ptrace.inner.ts).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { ApprovalRequest } from "../../../runner/approval/store.ts";
import { runApprovals } from "../../../runner/approval/store.ts";
import { readHistory } from "../../../runner/memory/history.ts";
import { runTask } from "../../../runner/run/setup.ts";
import { adversarialWorkspace, FIXTURES, outsideUntouched } from "./workspace.ts";

const REAL = "verifier: the runner's copy";

async function finishRun(backend: string, agent: string) {
  const ws = adversarialWorkspace("iso-checks");
  const sam = readFileSync(ws.sam, "utf8").replace("iterations: 1\n", "iterations: 1\napproval: [finish]\n");
  writeFileSync(ws.sam, sam);
  // The person: shown each request, approves it (the terminal prompt of `scifi run`).
  const shown: ApprovalRequest[] = [];
  const result = await runTask({
    home: ws.home,
    task: ws.sam,
    backend,
    model: `scripted:${join(FIXTURES, "agents", agent)}`,
    limits: { walltimeSec: 240, bashTimeoutSec: 30 },
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    approvalPrompt: async (request) => {
      shown.push(request);
      return { approved: true, note: "the checks look right" };
    },
  });
  const history = readHistory(join(result.dir, "history.jsonl"));
  const requests = runApprovals(ws.home, result.runId).map((v) => v.request);
  return { ws, result, history, shown, requests };
}

/** The cheat: its forged verdicts never happen, so the run fails and no one is asked to confirm it. */
export async function ptraceCheatIsNeverConfirmed(backend: string): Promise<void> {
  const run = await finishRun(backend, "iso-cross-check.yaml");
  expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
  expect(run.result.outcome.reason).toContain("failed checks: root/check-2");
  for (const id of ["root/check-2", "root/check-3"]) {
    const check = run.history.find((e) => e.type === "check" && e.check === id);
    expect(check, id).toMatchObject({ passed: false, exitCode: 1 });
    expect(check?.type === "check" ? check.output : "").toContain("max error 0.5 is above 2e-4");
  }
  expect(run.shown.map((r) => r.action)).not.toContain("finish");
  expect(run.requests.map((r) => r.action)).not.toContain("finish");
  outsideUntouched({ ws: run.ws } as Parameters<typeof outsideUntouched>[0]);
}

/** The probe: the person is shown each check's true exit code and the verifier's own output. */
export async function finishShowsTrueResults(backend: string): Promise<void> {
  const run = await finishRun(backend, "iso-fixed-lurker.yaml");
  expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
  const finish = run.shown.filter((r) => r.action === "finish");
  expect(finish).toHaveLength(1);
  const detail = finish[0]?.detail ?? "";
  const lines = detail.split("\n");
  for (const id of ["root/check-1", "root/check-2", "root/check-3"])
    expect(
      lines.some((l) => l.startsWith(`PASS ${id} (run stage): exit 0, `)),
      `${id} in:\n${detail}`,
    ).toBe(true);
  // The verifiers' own lines, as they printed them: no status 7 and no other verifier.
  expect(detail).toContain(`> ${REAL}`);
  expect(detail).toContain("> mean matches");
  expect(detail).not.toMatch(/exit 7|FAIL /);
  // Each check names a sandbox of its own.
  const sandboxes = lines.flatMap((l) => /, sandbox (\S+)$/.exec(l)?.[1] ?? []);
  expect(new Set(sandboxes).size).toBe(3);
  // The request the person decided is the one on record, approved.
  expect(run.requests.filter((r) => r.action === "finish").map((r) => r.detail)).toEqual([detail]);
}
