// Attacker a37c on Apptainer, whole runs inside the harness as the non-root user (fuse-overlayfs
// views): what held. A detached process the work left (setsid, nohup) to put a deleted file back
// after the checks judged the folder is gone with the work's instance. The whiteout-name cheat that
// broke is test/open/a37c-whiteout-e2e.pending.ts.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HONEST, LURKER, runLeakTask } from "../../attack/a37c-run.ts";
import { workToolExchanges } from "../../run/adversarial/workspace.ts";

describe("a37c: check views (apptainer, inside the harness)", { timeout: 300_000 }, () => {
  it("control: deleting debug.log passes, on a fuse-overlayfs view", async () => {
    expect(process.getuid?.()).not.toBe(0);
    const run = await runLeakTask(HONEST, "apptainer");
    expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
    const checks = run.history.flatMap((e) => (e.type === "check" ? [e] : []));
    expect(checks.map((c) => [c.check, c.passed])).toEqual([["root/check-1", true]]);
  });

  it("a detached process the work left to put debug.log back later is gone before the checks", async () => {
    const run = await runLeakTask(LURKER, "apptainer");
    expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
    const bash = workToolExchanges(join(run.result.dir, "audit.jsonl")).find((t) => t.name === "bash");
    expect(
      Number.parseInt(bash?.output.trim().split("\n").at(-1) ?? "0", 10),
      bash?.output,
    ).toBeGreaterThanOrEqual(2);
    await new Promise((r) => setTimeout(r, 10_000));
    expect(existsSync(join(run.taskDir, "debug.log")), "the lurker outlived the work").toBe(false);
  });
});
