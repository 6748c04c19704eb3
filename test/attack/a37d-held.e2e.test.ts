// Attacker a37d on Docker (a root runner: the kernel overlay), issue 37 as changed by 213817e: the
// next run stage's view, asset folders and sandbox are made ready while a check runs. What held:
// - check 1's code, running beside check 2's already-started sandbox (seen: two check containers of
//   the run alive at once, never three), sees no process of it (a lurker would have written 42 into
//   its /task and ptrace-seized it) and holds no descriptor of the runner's; what it leaves (/tmp,
//   /var/tmp, /dev/shm, its view, unix and abstract sockets, System V objects; a kernel key and the
//   image's python3 are refused) reaches neither check 2, whose verifier fails on 41 with its own
//   status, nor check 3 (check 1's view folder again, with a fresh upper layer), nor the compare
//   stage, nor the delivered folder;
// - the runner killed (SIGKILL) while check 1 runs and check 2's sandbox and view are ready: both
//   sandboxes and both views are left, `scifi sandbox prune` removes all four, and `--resume` runs
//   every check in new sandboxes on new views and passes (the honest control).
// The scripted agent is labelled (no real LLM); helpers in a37d-run.ts.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readHistory } from "../../runner/memory/history.ts";
import { readState } from "../../runner/run-folder/state.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO, waitFor } from "../run/harness.ts";
import {
  agent,
  CHEAT,
  checkEvent,
  cli,
  compareOutput,
  probeReport,
  runAhead,
  SLOW_HONEST,
  viewMounts,
  workspace,
} from "./a37d-run.ts";
import { containersOf } from "./a41-run.ts";

const CLI = join(REPO, "bin", "scifi.js");

describe.skipIf(!hasEngine("docker") || process.getuid?.() !== 0)(
  "a37d: the next check made ready while one runs (docker, root)",
  { timeout: 300_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("check 1's code beside check 2's started sandbox reaches nothing of it, of the compare stage or of the delivered folder", async () => {
      const run = await runAhead(CHEAT, "docker");
      expect(run.overlap, "check 2's sandbox was never up while check 1 ran").toBe(2);
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
      const probe = probeReport(run);
      expect(probe.foreign, "check 1 saw processes of another sandbox").toEqual([]);
      expect(probe.lurk).toEqual({});
      // Its processes hold their own stdio and sockets only: no descriptor of the runner's (a view, a lock, /dev/fuse).
      const fds = Object.values(probe.fds as Record<string, string>);
      expect(fds.filter((target) => !/^(\/dev\/null|pipe:|socket:)/.test(target))).toEqual([]);
      expect(probe.unix).toEqual(expect.arrayContaining(["@a37d", "/tmp/a37d.sock"]));
      // The image is read-only here: no python3 of check 1's first on PATH for check 2's verifier.
      const marks = probe.marks as Record<string, unknown>;
      expect(marks["/usr/local/bin/python3"]).toBe("Read-only file system");
      const second = checkEvent(run, "root/check-2");
      expect([second.passed, second.exitCode]).toEqual([false, 1]);
      expect(second.output).toContain("LOOK marks: none");
      expect(second.output).toContain("LOOK answer '41'");
      // Another PID, network, IPC and mount namespace than check 1's.
      const ns = probe.ns as Record<string, string>;
      for (const kind of ["pid", "net", "ipc", "mnt"]) expect(second.output).not.toContain(ns[kind]);
      const third = checkEvent(run, "root/check-3");
      expect([third.passed, third.output]).toEqual([true, expect.stringContaining("LOOK marks: none")]);
      // The two view folders in turn: check 3 got check 1's folder again, with a fresh upper layer.
      expect(second.output).toMatch(/LOOK task upperdir=\S+\/checks-copy-2\.layers\/upper\n/);
      expect(third.output).toMatch(/LOOK task upperdir=\S+\/checks-copy\.layers\/upper\n/);
      expect(checkEvent(run, "root/check-4").passed).toBe(true);
      expect(compareOutput(run)).toContain("LOOK marks: none");
      expect(readdirSync(run.ws.taskDir).sort()).toEqual([
        "Makefile",
        "answer.txt",
        "checks",
        "probe.py",
        "task.md",
      ]);
      expect(containersOf(run.result.runId)).toEqual([]);
      expect(viewMounts(run.ws.home)).toEqual([]);
    });

    it("a runner killed with check 2 made ready: prune removes both sandboxes and views; --resume passes on new ones", async () => {
      const ws = workspace();
      const agentFile = join(ws.root, "agent.yaml");
      writeFileSync(agentFile, agent(SLOW_HONEST));
      const child = spawn(
        process.execPath,
        [CLI, "run", join(ws.taskDir, "task.md"), "--backend", "docker", "--model", `scripted:${agentFile}`],
        { env: { ...process.env, SCIFI_HOME: ws.home }, stdio: "ignore" },
      );
      const runId = await waitFor(
        () =>
          existsSync(join(ws.home, "runs"))
            ? readdirSync(join(ws.home, "runs")).find((n) => /^\d/.test(n))
            : undefined,
        60_000,
      );
      // Check 1 sleeps in its view; check 2's view and sandbox are ready beside it.
      await waitFor(
        () => (viewMounts(ws.home).length === 2 && containersOf(runId).length === 2 ? true : undefined),
        90_000,
      );
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      expect(
        viewMounts(ws.home)
          .map((d) => d.split("/").at(-1))
          .sort(),
      ).toEqual(["checks-copy", "checks-copy-2"]);
      expect(containersOf(runId)).toHaveLength(2);
      expect(await cli(["sandbox", "prune"], ws.home)).toBe(0);
      expect(viewMounts(ws.home)).toEqual([]);
      expect(containersOf(runId)).toEqual([]);
      const runDir = join(ws.home, "runs", runId);
      for (const view of ["checks-copy", "checks-copy-2"]) {
        expect(existsSync(join(runDir, view))).toBe(false);
        expect(existsSync(join(runDir, `${view}.layers`))).toBe(false);
      }
      // A person lets check 1 be quick now; the work's answer is unchanged.
      rmSync(join(ws.taskDir, "slow"));
      expect(await cli(["run", "--resume", runId, "--model", `scripted:${agentFile}`], ws.home)).toBe(0);
      expect(readState(join(runDir, "state.json")).outcome?.status).toBe("passed");
      const history = readHistory(join(runDir, "history.jsonl"));
      // Every check of the resumed run ran in a sandbox of its own (named for the resume), none reused.
      const checks = history.flatMap((e) => (e.type === "check" ? [[e.check, e.passed, e.sandbox]] : []));
      expect(checks.map(([id, passed]) => [id, passed])).toEqual([
        ["root/check-1", true],
        ["root/check-2", true],
        ["root/check-3", true],
        ["root/check-4", true],
      ]);
      const sandboxes = checks.map(([, , sandbox]) => String(sandbox));
      expect(new Set(sandboxes).size).toBe(4);
      for (const name of sandboxes) expect(name).toContain(`${runId}-r1-`);
      const died = history.filter((e) => e.type === "sandbox_died" || e.type === "limit");
      expect(died).toEqual([]);
      expect(containersOf(runId)).toEqual([]);
      expect(viewMounts(ws.home)).toEqual([]);
    });
  },
);
