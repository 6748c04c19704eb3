// Fixed (runner/run/checks/check-view.ts: a task folder holding a `.wh.` name or a large sparse file gets the copy, not
// fuse-overlayfs, and the reason is recorded; a forced SCIFI_CHECK_VIEW says every kind it passed over;
// SCIFI_CHECK_VIEW and SCIFI_CHECK_COPY_MAX_BYTES are read at run start, runner/run/setup.ts). The finding:
// A37C-1b, the same whiteout name against a CHECK ASSET (attacker on issue 37's check views;
// Apptainer, a runner that is not root: fuse-overlayfs). Runs INSIDE the Apptainer harness: move it
// to test/sandbox/apptainer/a37c-whiteout-asset.inner.ts (imports one level deeper) when fixed.
// Docker holds (test/attack/a37c-held.e2e.test.ts).
//
// Doc promise (docs/loop.md, trust model): check assets are put back before every check phase and
// "What a check may rely on: ... the SAM files and check assets exactly as at run start".
// What happened: the check asset tests/test_grader.py shares tests/ with the agent's tests (scifi
// validate only warns), and the check runs `for t in tests/test_*.py; do python3 "$t" || exit 1;
// done`. The scripted agent writes no answer, adds its own passing tests/test_smoke.py, and
// `touch tests/.wh.test_grader.py`. restore() finds the asset intact (no tampering: the asset is
// unchanged, and only asset-only folders are cleaned), but fuse-overlayfs hides it from the view,
// and the check sandbox binds the SAM files and check assets read-only over themselves FROM THE VIEW
// (`checks-copy/tests/test_grader.py -> /task/tests/test_grader.py`): Apptainer refuses to start
// ("mount source ... doesn't exist"), and runTask throws SandboxStartFailed out of the checks
// phase. No check runs, no verdict is recorded, the agent's cheat is not named anywhere, and the
// person reads an Apptainer infrastructure error (a resume meets it again). `touch .wh.task.md`
// (the SAM file is bound over itself the same way) does the same to ANY task: seen here too.
// Suggested fix: as in a37c-fuse-whiteout-name.pending.ts (no fuse-overlayfs view over a lower layer
// holding `.wh.` names); and restore() may treat a `.wh.<asset>` beside a check asset as tampering.
import { describe, expect, it } from "vitest";
import { ASSET_HIDE, ASSET_HONEST, runAssetTask, runLeakTask } from "../../attack/a37c-run.ts";

describe("a37c: a whiteout name hides a check asset (apptainer)", { timeout: 300_000 }, () => {
  it("control: the answer written passes", async () => {
    expect(process.getuid?.()).not.toBe(0);
    const run = await runAssetTask(ASSET_HONEST, "apptainer");
    expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
  });

  it("a .wh.test_grader.py beside the runner's test: the runner's test still runs and fails", async () => {
    const run = await runAssetTask(ASSET_HIDE, "apptainer");
    const checks = run.history.flatMap((e) => (e.type === "check" ? [e] : []));
    expect(checks.map((c) => [c.passed, c.output])).toEqual([
      [false, expect.stringContaining("grader: the runner's test")],
    ]);
    expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
  });

  it("a .wh.task.md beside the SAM file: the check phase still runs and judges", async () => {
    const run = await runLeakTask("rm -f debug.log && touch .wh.task.md", "apptainer");
    const checks = run.history.flatMap((e) => (e.type === "check" ? [e] : []));
    expect(checks.map((c) => c.check)).toEqual(["root/check-1"]);
  });
});
