// Attacker a37c on Docker (a root runner here: the kernel overlay): an overlay whiteout NAME
// (`.wh.debug.log`) beside a file the Expectation says must be gone does not hide it from the
// check's view; the honest control passes. On Apptainer (fuse-overlayfs) the same cheat passes:
// test/open/a37c-whiteout-e2e.pending.ts.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readState } from "../../runner/run-folder/state.ts";
import { hasEngine } from "../helpers/engines.ts";
import { workToolExchanges } from "../run/adversarial/workspace.ts";
import { ensureImage } from "../run/harness.ts";
import {
  ASSET_HIDE,
  ASSET_HONEST,
  HONEST,
  LURKER,
  runAssetTask,
  runLeakTask,
  WHITEOUT_NAME,
} from "./a37c-run.ts";

describe.skipIf(!hasEngine("docker"))(
  "a37c: check views against a whiteout name (docker)",
  { timeout: 300_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("control: deleting debug.log passes", async () => {
      const run = await runLeakTask(HONEST, "docker");
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
      expect(existsSync(join(run.taskDir, "debug.log"))).toBe(false);
    });

    it("a .wh.debug.log beside a kept debug.log: the check sees debug.log and fails", async () => {
      const run = await runLeakTask(WHITEOUT_NAME, "docker");
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
      const checks = run.history.flatMap((e) => (e.type === "check" ? [e] : []));
      expect(checks.map((c) => [c.check, c.passed])).toEqual([["root/check-1", false]]);
      expect(checks[0]?.output).toContain("debug.log");
      expect(existsSync(join(run.taskDir, "debug.log"))).toBe(true);
      const state = readState(join(run.result.dir, "state.json"));
      expect(state.checks?.map((c) => c.view)).toEqual([
        process.getuid?.() === 0 ? "overlay" : "fuse-overlayfs",
      ]);
    });

    it("a detached process the work left to put debug.log back later is gone before the checks", async () => {
      const run = await runLeakTask(LURKER, "docker");
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
      // The lurker was alive when the work's command returned (ps counted it beside grep).
      const bash = workToolExchanges(join(run.result.dir, "audit.jsonl")).find((t) => t.name === "bash");
      expect(
        Number.parseInt(bash?.output.trim().split("\n").at(-1) ?? "0", 10),
        bash?.output,
      ).toBeGreaterThanOrEqual(2);
      await new Promise((r) => setTimeout(r, 10_000));
      expect(existsSync(join(run.taskDir, "debug.log")), "the lurker outlived the work").toBe(false);
    });

    it("control: the answer written, the runner's test in a shared tests/ folder passes", async () => {
      const run = await runAssetTask(ASSET_HONEST, "docker");
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
    });

    it("a .wh.<asset> name beside a check asset in a shared folder does not hide the runner's test", async () => {
      const run = await runAssetTask(ASSET_HIDE, "docker");
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
      const checks = run.history.flatMap((e) => (e.type === "check" ? [e] : []));
      expect(checks.map((c) => c.passed)).toEqual([false]);
      expect(checks[0]?.output).toContain("grader: the runner's test");
    });

    it("a .wh.task.md beside the SAM file: the check phase runs and passes the deleted debug.log", async () => {
      const run = await runLeakTask("rm -f debug.log && touch .wh.task.md", "docker");
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
      const checks = run.history.flatMap((e) => (e.type === "check" ? [e] : []));
      expect(checks.map((c) => [c.check, c.passed])).toEqual([["root/check-1", true]]);
    });
  },
);
