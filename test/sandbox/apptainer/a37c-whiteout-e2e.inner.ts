// Fixed (runner/run/checks/check-view.ts: a task folder holding a `.wh.` name or a large sparse file gets the copy, not
// fuse-overlayfs, and the reason is recorded; a forced SCIFI_CHECK_VIEW says every kind it passed over;
// SCIFI_CHECK_VIEW and SCIFI_CHECK_COPY_MAX_BYTES are read at run start, runner/run/setup.ts). The finding:
// A37C-1, end to end (attacker on issue 37's check views; Apptainer, a runner that is not root:
// fuse-overlayfs). Runs INSIDE the Apptainer harness: move it to
// test/sandbox/apptainer/a37c-whiteout-e2e.inner.ts (imports one level deeper) when the fix lands.
// The unit-level case is a37c-fuse-whiteout-name.pending.ts; Docker holds (test/attack/a37c-held.e2e.test.ts).
//
// Doc promise (docs/loop.md, "What a check may rely on"): "a view of the task folder exactly as the
// work left it"; a PASS means the Expectation holds on what the agent delivered.
// What happened: the task asks that `debug.log` (a leaked credential) be deleted, checked by `test
// ! -e debug.log`. The scripted agent keeps it and only runs `touch .wh.debug.log`. fuse-overlayfs
// treats `.wh.<name>` in its lower layer as a whiteout: the check's view has no debug.log (nor the
// .wh. file), the check passes, the run ends `passed`, and the delivered folder still holds the
// credential. recordDelivered/deliveredChanges do not notice: the task folder did not change.
// Suggested fix: see a37c-fuse-whiteout-name.pending.ts (fall back to the copy, saying why, when the
// lower layer holds a `.wh.`-prefixed name; or compare the view's listing with the task folder's).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HONEST, runLeakTask, WHITEOUT_NAME } from "../../attack/a37c-run.ts";

describe("a37c: a whiteout name hides a kept file from the check (apptainer)", { timeout: 300_000 }, () => {
  it("control: deleting debug.log passes", async () => {
    expect(process.getuid?.()).not.toBe(0);
    const run = await runLeakTask(HONEST, "apptainer");
    expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
  });

  it("a .wh.debug.log beside a kept debug.log: no PASS while debug.log is delivered", async () => {
    const run = await runLeakTask(WHITEOUT_NAME, "apptainer");
    expect(existsSync(join(run.taskDir, "debug.log"))).toBe(true);
    const checks = run.history.flatMap((e) => (e.type === "check" ? [e] : []));
    expect(checks.map((c) => [c.check, c.passed, c.output])).toEqual([
      ["root/check-1", false, expect.stringContaining("debug.log")],
    ]);
    expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
  });
});
