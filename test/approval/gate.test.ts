// The approval gate without sandboxes: the vocabulary (validate with the real CLI, the site policy),
// requests and decisions in the run folder, a request taken up again after a restart, the timeout.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ApprovalGate, type ApprovalRecord, ApprovalTimedOut } from "../../runner/approval/gate.ts";
import { approvalsFile, decide, pendingApprovals, runApprovals } from "../../runner/approval/store.ts";
import { parseSitePolicy } from "../../runner/policy/site.ts";
import { REPO } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

function tmp(): string {
  const root = mkdtempSync(join(tmpdir(), "scifi-approval-"));
  roots.push(root);
  return root;
}

function validate(approval: string): { code: number; out: string } {
  const dir = tmp();
  const sam = join(dir, "task.md");
  writeFileSync(sam, `---\nname: t\napproval: ${approval}\n---\n# T\n\n## To-do\nx\n\n## Expectation\ny\n`);
  try {
    const out = execFileSync(process.execPath, [CLI, "validate", sam], { encoding: "utf8", stdio: "pipe" });
    return { code: 0, out };
  } catch (error) {
    const e = error as { status: number; stdout: string; stderr: string };
    return { code: e.status, out: e.stdout + e.stderr };
  }
}

describe("the approval vocabulary", () => {
  it("scifi validate rejects an unknown action, with a did-you-mean, and accepts the known ones", () => {
    const unknown = validate("[launch_missiles]");
    expect(unknown.code).toBe(1);
    expect(unknown.out).toContain("unknown approval action `launch_missiles`");
    expect(unknown.out).toContain("known actions: submit_job, network, delete, finish, run");
    const close = validate("[submit]");
    expect(close.code).toBe(1);
    expect(close.out).toContain("did you mean `submit_job`?");
    expect(validate("[submit_job, finish, network, run]").code).toBe(0);
  });

  it("`delete` is enforced, so validate and the site policy accept it", () => {
    expect(validate("[delete, submit_job]").code).toBe(0);
    expect(parseSitePolicy("approval: {require: [delete]}\n", "site.yaml").approvalRequired).toEqual([
      "delete",
    ]);
  });

  it("the site policy's approval.require uses the same vocabulary", () => {
    expect(() => parseSitePolicy("approval: {require: [lanch]}\n", "site.yaml")).toThrow(
      /unknown approval action/,
    );
    const policy = parseSitePolicy(
      "approval: {require: [finish, submit_job], timeout: 2h, onApproval: 'echo hi'}\n",
      "site.yaml",
    );
    expect(policy).toMatchObject({
      approvalRequired: ["submit_job", "finish"],
      approvalTimeoutSec: 7200,
      onApproval: "echo hi",
    });
  });
});

describe("the approval gate", () => {
  function home(runId: string): string {
    const h = join(tmp(), "home");
    mkdirSync(join(h, "runs", runId), { recursive: true });
    return h;
  }

  it("records a request, waits, and returns a person's approval with who, when and the note", async () => {
    const h = home("r1");
    const records: ApprovalRecord[] = [];
    const hook = join(h, "hook.txt");
    const gate = new ApprovalGate({
      home: h,
      runId: "r1",
      required: ["submit_job"],
      pollMs: 20,
      onApproval: `echo "$SCIFI_APPROVAL_ACTION $SCIFI_APPROVAL_ID $SCIFI_RUN_ID" > ${hook}`,
    });
    gate.attach({ record: (r) => records.push(r), iteration: () => 2 });
    const answer = gate.ask({ action: "submit_job", summary: "submit a.sh", detail: "#!/bin/sh\necho" });
    const pending = await waitFor(() => pendingApprovals(h)[0]);
    expect(pending).toMatchObject({ runId: "r1", request: { action: "submit_job", iteration: 2 } });
    expect(statSync(approvalsFile(h, "r1")).mode & 0o777).toBe(0o600);
    decide(h, "r1", pending.request.id, true, "looks fine", "alice");
    const result = await answer;
    expect(result).toMatchObject({ approved: true, decision: { who: "alice", note: "looks fine" } });
    expect(records.map((r) => r.state)).toEqual(["requested", "approved"]);
    expect(pendingApprovals(h)).toEqual([]);
    await waitFor(
      () => readFileSync(hook, "utf8").trim() === `submit_job ${pending.request.id} r1` || undefined,
    );
    // A decided request cannot be decided again.
    expect(() => decide(h, "r1", pending.request.id, false, "no")).toThrow(/already approved by alice/);
  });

  it("a denial returns the reason; a restarted run takes up its pending request instead of asking twice", async () => {
    const h = home("r2");
    const ask = { action: "finish" as const, summary: "mark t passed", detail: "checks: PASS c1" };
    const first = new ApprovalGate({ home: h, runId: "r2", required: ["finish"], pollMs: 20 });
    void first.ask(ask).catch(() => undefined);
    const pending = await waitFor(() => pendingApprovals(h)[0]);
    // The process dies (here: a second gate, as after a restart) and asks again: same request.
    const second = new ApprovalGate({ home: h, runId: "r2", required: ["finish"], pollMs: 20 });
    const again = second.ask(ask);
    decide(h, "r2", pending.request.id, false, "the plot is wrong", "bob");
    expect(await again).toMatchObject({ approved: false, decision: { note: "the plot is wrong" } });
    expect(runApprovals(h, "r2")).toHaveLength(1);
  });

  it("a terminal prompt decides like scifi approve; a decision from elsewhere aborts the prompt", async () => {
    const h = home("r4");
    const gate = new ApprovalGate({
      home: h,
      runId: "r4",
      required: ["finish"],
      pollMs: 20,
      prompt: async (request) => {
        expect(request.action).toBe("finish");
        return { approved: false, note: "typed n" };
      },
    });
    const answer = await gate.ask({ action: "finish", summary: "mark passed", detail: "" });
    expect(answer).toMatchObject({ approved: false, decision: { note: "typed n" } });

    let aborted = false;
    const slow = new ApprovalGate({
      home: h,
      runId: "r4",
      required: ["run"],
      pollMs: 20,
      prompt: (_request, signal) =>
        new Promise((resolve) => {
          signal.addEventListener("abort", () => {
            aborted = true;
            resolve(undefined);
          });
        }),
    });
    const waiting = slow.ask({ action: "run", summary: "start", detail: "" });
    const pending = await waitFor(() => pendingApprovals(h)[0]);
    decide(h, "r4", pending.request.id, true, undefined, "carol");
    expect(await waiting).toMatchObject({ approved: true, decision: { who: "carol" } });
    expect(aborted).toBe(true);
  });

  it("a run that ended withdraws what nobody decided; a withdrawn request is never taken up again", async () => {
    const h = home("r5");
    const ask = { action: "finish" as const, summary: "mark passed", detail: "" };
    const first = new ApprovalGate({ home: h, runId: "r5", required: ["finish"], pollMs: 20 });
    void first.ask(ask).catch(() => undefined);
    const pending = await waitFor(() => pendingApprovals(h)[0]);
    first.withdrawPending("the run ended failed");
    expect(pendingApprovals(h)).toEqual([]);
    expect(() => decide(h, "r5", pending.request.id, true, undefined)).toThrow(/already withdrawn/);
    const second = new ApprovalGate({ home: h, runId: "r5", required: ["finish"], pollMs: 20 });
    void second.ask(ask).catch(() => undefined);
    const again = await waitFor(() => pendingApprovals(h)[0]);
    expect(again.request.id).toBe(`${pending.request.id}-2`);
    decide(h, "r5", again.request.id, true, undefined);
  });

  it("an undecided request times out: ApprovalTimedOut names it and it is no longer pending", async () => {
    const h = home("r3");
    const gate = new ApprovalGate({ home: h, runId: "r3", required: ["run"], pollMs: 20, timeoutSec: 1 });
    const error = await gate.ask({ action: "run", summary: "start t", detail: "" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApprovalTimedOut);
    expect(String((error as Error).message)).toMatch(/approval request run-[0-9a-f]{8} \(run: start t\)/);
    expect(runApprovals(h, "r3")[0]?.state).toBe("timed_out");
    expect(pendingApprovals(h)).toEqual([]);
  });

  it("a request filed without waiting: marked waits false, its decision taken up once, or timed out without ending anything", async () => {
    const h = home("r5");
    const records: ApprovalRecord[] = [];
    const gate = new ApprovalGate({ home: h, runId: "r5", required: ["network"], timeoutSec: 1 });
    gate.attach({ record: (r) => records.push(r), iteration: () => 1 });
    const a = gate.file({ action: "network", summary: "reach a.test:443", detail: "a" });
    expect(a).toMatchObject({ waits: false, action: "network" });
    // Filed again before it was taken up (a restart): the same request.
    expect(gate.file({ action: "network", summary: "reach a.test:443", detail: "a" }).id).toBe(a.id);
    expect(gate.takeUp(a.id)).toEqual({ state: "pending" });
    decide(h, "r5", a.id, true, "fine", "alice");
    expect(gate.takeUp(a.id)).toMatchObject({ approved: true, decision: { who: "alice", note: "fine" } });
    expect(gate.takeUp(a.id)).toMatchObject({ approved: true });
    // The second filing put the pending request on the records again (as after a restart).
    expect(records.map((r) => r.state)).toEqual(["requested", "requested", "approved"]);
    expect(runApprovals(h, "r5")).toHaveLength(1);
    expect(runApprovals(h, "r5")[0]?.used).toBe(true);
    const b = gate.file({ action: "network", summary: "reach b.test:443", detail: "b" });
    await new Promise((r) => setTimeout(r, 1100));
    expect(gate.takeUp(b.id)).toEqual({ state: "timed_out" });
    expect(runApprovals(h, "r5").find((v) => v.request.id === b.id)?.state).toBe("timed_out");
    expect(records.map((r) => r.state).slice(3)).toEqual(["requested", "timed_out"]);
    expect(gate.takeUp("network-nope")).toBeUndefined();
  });
});

async function waitFor<T>(probe: () => T | undefined): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = probe();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("timed out");
}
