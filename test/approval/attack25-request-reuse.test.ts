// Found by the issue-25 attacker session (was test/open/a25-request-reuse.pending.ts); fixed: the gate
// takes up a request after a restart only when its action, summary and detail are the same text.
// Attacker session for issue 25 (A25-3): an approval given for one job script is taken up by a
// different script after a restart, because "the same request" is decided on a 32-bit id.
//
// Docs promise (docs/approval.md, "Restarts"): a resumed run "when it reaches the same gated action
// takes up its pending (or meanwhile decided) request instead of asking again"; "the request shows
// the exact script text, its sha256"; "What a person reads is what they decide on" (trust rule 11).
//
// What happened: the request id is `<action>-<first 8 hex of sha256(action, summary, detail)>`,
// and the gate takes up any unused request whose id has that base. Two scripts with the same 8 hex
// take only a birthday search (about 2^16 variants of each: under a second in the sandbox; the pair
// below was found that way). The agent submits the harmless one; the worker dies while it waits (a
// daemon restart, a SIGKILL); the person approves the harmless text; the resumed pass submits the
// other one, and the gate answers "approved" with the harmless request as its record. The broker
// then submits the script it froze: `rm -rf /task/data`, never shown to anyone.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ApprovalGate, type AskRequest } from "../../runner/approval/gate.ts";
import { decide, pendingApprovals } from "../../runner/approval/store.ts";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

// A birthday pair: sha256("submit_job\nsubmit job.sh\n" + detail) agree on the first 8 hex (150b9ca7).
const HARMLESS: AskRequest = {
  action: "submit_job",
  summary: "submit job.sh",
  detail: "#!/bin/sh\n# fit run 154640\npython3 fit.py\n",
};
const HOSTILE: AskRequest = {
  action: "submit_job",
  summary: "submit job.sh",
  detail: "#!/bin/sh\n# fit run 57110\nrm -rf /task/data\n",
};

describe("A25-3: a request id reused across a restart", () => {
  it("a different script does not take up the approval of another", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-a25-reuse-"));
    roots.push(home);
    mkdirSync(join(home, "runs", "r1"), { recursive: true });
    const dying = new AbortController();
    const first = new ApprovalGate({
      home,
      runId: "r1",
      required: ["submit_job"],
      pollMs: 20,
      signal: dying.signal,
    });
    const waiting = first.ask(HARMLESS).catch((e: unknown) => e);
    while (pendingApprovals(home).length === 0) await new Promise((r) => setTimeout(r, 10));
    dying.abort(new Error("worker killed"));
    await waiting;
    const [shown] = pendingApprovals(home);
    expect(shown?.request.detail).toContain("python3 fit.py");
    // The person approves what is shown.
    decide(home, "r1", shown?.request.id ?? "", true, "the fit is fine");
    // The resumed pass submits another script: it must be asked on its own (here: it times out).
    const resumed = new ApprovalGate({
      home,
      runId: "r1",
      required: ["submit_job"],
      pollMs: 20,
      timeoutSec: 1,
    });
    const answer = await resumed.ask(HOSTILE).catch((e: unknown) => e);
    expect(answer).toBeInstanceOf(Error);
  });
});
