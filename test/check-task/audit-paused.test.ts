// A check-task audit whose run paused did not happen (a41d-ctl-check-task): a paused run has no
// outcome, only a stand-in `failed`, and its checks may never have run. Its audit is an error (a
// finding, and auditTask caches nothing with an error), never "the checks failed as they must".
// The run's records are a real history file; no engine is needed.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { auditRunOf, findingsOf } from "../../runner/check-task/audit.ts";

function runDir(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "audit-paused-")), "run");
  mkdirSync(dir);
  writeFileSync(join(dir, "history.jsonl"), "");
  return dir;
}

const base = { audit: "untouched", what: "claims without doing anything", expect: "fail" } as const;
const stopped = { status: "failed", reason: "the run stopped without an outcome" } as const;

describe("auditRunOf", () => {
  it("a paused run is no verdict: status error, not ok, a finding that says so", () => {
    const dir = runDir();
    const run = auditRunOf(base, {
      runId: "r1",
      dir,
      outcome: stopped,
      paused: { at: new Date().toISOString(), phase: "created", reason: "paused by a41d@login" },
    });
    expect(run).toMatchObject({ ok: false, status: "error", runId: "r1", checks: [] });
    expect(run.reason).toMatch(/paused after phase created .* before it had a verdict/);
    expect(findingsOf(run, ["root/check-1"])).toEqual([
      expect.objectContaining({
        audit: "untouched",
        text: expect.stringContaining("the audit's run did not end with a verdict (error:"),
      }),
    ]);
  });

  it("a run that ended failed is the untouched audit's pass (the checks failed, as they must)", () => {
    const run = auditRunOf(base, { runId: "r2", dir: runDir(), outcome: stopped });
    expect(run).toMatchObject({ ok: true, status: "failed" });
    expect(findingsOf(run, ["root/check-1"])).toEqual([]);
  });
});
