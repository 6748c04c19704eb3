// Attacker a37d on Apptainer (INSIDE the harness, a non-root runner: fuse-overlayfs views, every
// instance under the same host uid), issue 37 as changed by 213817e: the next run stage's view and
// sandbox are made ready while a check runs. What held: check 1's code, beside check 2's
// already-started instance (two check instances of the run seen at once), sees no process of it
// (its lurker would have written 42 into that instance's /task and ptrace-seized it) and holds no
// descriptor of the runner's; what it leaves (/tmp, /var/tmp, /dev/shm, its view, unix and abstract
// sockets, System V objects, a kernel key in its user keyring, a python3 that exits 0 and an
// /etc/ld.so.preload in its own writable tmpfs) reaches neither check 2 (its verifier fails on 41
// with its own status; another user, PID, network, IPC and mount namespace), nor check 3 (check 1's
// view folder again), nor the compare stage, nor the delivered folder. The runner killed (SIGKILL)
// while check 1 runs and check 2's instance and view are ready: both instances and both
// fuse-overlayfs views are left; `scifi sandbox prune` removes all four (no fuse-overlayfs of the
// run stays), and `--resume` runs every check in new instances and passes (the honest control).
// The scripted agent is labelled (no real LLM); helpers in test/attack/a37d-run.ts.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readHistory } from "../../../runner/memory/history.ts";
import { readState } from "../../../runner/run-folder/state.ts";
import { sifFileName } from "../../../runner/sandbox/apptainer.ts";
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
} from "../../attack/a37d-run.ts";
import { REPO, waitFor } from "../../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");

/** This run's instances alive now. */
function instancesOf(runId: string): string[] {
  const listed = execFileSync("apptainer", ["instance", "list"], { encoding: "utf8" });
  return listed.split("\n").filter((l) => l.includes(runId.replace(/[^A-Za-z0-9_.-]/g, "_")));
}

/** fuse-overlayfs processes serving a view of this home's runs. */
function fuseDaemons(home: string): string[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .flatMap((p) => {
      try {
        const args = readFileSync(`/proc/${p}/cmdline`, "latin1");
        return args.includes("fuse-overlayfs") && args.includes(home) ? [p] : [];
      } catch {
        return [];
      }
    });
}

const IMAGE = "scifi-sci:local";

describe("a37d: the next check made ready while one runs (apptainer, inside the harness)", {
  timeout: 120_000,
}, () => {
  beforeAll(() => {
    expect(process.getuid?.()).not.toBe(0);
    const sif = join(process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif", sifFileName(IMAGE));
    expect(
      existsSync(sif),
      `no SIF for ${IMAGE} at ${sif}: bash scripts/apptainer-harness.sh sif ${IMAGE}`,
    ).toBe(true);
  });

  it("check 1's code beside check 2's started instance reaches nothing of it, of the compare stage or of the delivered folder", async () => {
    const run = await runAhead(CHEAT, "apptainer");
    expect(run.overlap, "check 2's instance was never up while check 1 ran").toBe(2);
    expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
    const probe = probeReport(run);
    expect(probe.foreign, "check 1 saw processes of another instance").toEqual([]);
    expect(probe.lurk).toEqual({});
    // Its processes hold their own stdio and sockets only: no descriptor of the runner's (a view, a lock, /dev/fuse).
    const fds = Object.values(probe.fds as Record<string, string>);
    expect(fds.filter((target) => !/^(\/dev\/null|pipe:|socket:)/.test(target))).toEqual([]);
    const marks = probe.marks as Record<string, unknown>;
    // The key was made (no seccomp refusal here): it stays in check 1's own user namespace.
    expect(marks.key_user).toBeGreaterThan(0);
    expect(probe.unix).toEqual(expect.arrayContaining(["@a37d", "/tmp/a37d.sock"]));
    // --writable-tmpfs: check 1 put a python3 that exits 0 first on PATH, and /etc/ld.so.preload, in
    // its own instance; check 2's verifier is the image's python3 (it printed, and failed on 41).
    expect([marks["/usr/local/bin/python3"], marks["/etc/ld.so.preload"]]).toEqual(["written", "written"]);
    const second = checkEvent(run, "root/check-2");
    expect([second.passed, second.exitCode]).toEqual([false, 1]);
    expect(second.output).toContain("LOOK marks: none");
    expect(second.output).toContain("LOOK answer '41'");
    const ns = probe.ns as Record<string, string>;
    for (const kind of ["user", "pid", "net", "ipc", "mnt"]) expect(second.output).not.toContain(ns[kind]);
    const third = checkEvent(run, "root/check-3");
    expect([third.passed, third.output]).toEqual([true, expect.stringContaining("LOOK marks: none")]);
    expect(checkEvent(run, "root/check-4").passed).toBe(true);
    expect(compareOutput(run)).toContain("LOOK marks: none");
    expect(readdirSync(run.ws.taskDir).sort()).toEqual([
      "Makefile",
      "answer.txt",
      "checks",
      "probe.py",
      "task.md",
    ]);
    expect(viewMounts(run.ws.home)).toEqual([]);
    expect(instancesOf(run.result.runId)).toEqual([]);
  });

  it("a runner killed with check 2 made ready: prune removes both instances and views; --resume passes on new ones", async () => {
    const ws = workspace();
    const agentFile = join(ws.root, "agent.yaml");
    writeFileSync(agentFile, agent(SLOW_HONEST));
    const child = spawn(
      process.execPath,
      [CLI, "run", join(ws.taskDir, "task.md"), "--backend", "apptainer", "--model", `scripted:${agentFile}`],
      { env: { ...process.env, SCIFI_HOME: ws.home }, stdio: "ignore" },
    );
    const runs = join(ws.home, "runs");
    const runId = await waitFor(
      () => (existsSync(runs) ? readdirSync(runs).find((n) => /^\d/.test(n)) : undefined),
      60_000,
    );
    // Check 1 sleeps in its view; check 2's view and instance are ready beside it.
    await waitFor(
      () => (viewMounts(ws.home).length === 2 && instancesOf(runId).length === 2 ? true : undefined),
      90_000,
    );
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    expect(
      viewMounts(ws.home)
        .map((d) => d.split("/").at(-1))
        .sort(),
    ).toEqual(["checks-copy", "checks-copy-2"]);
    expect(instancesOf(runId)).toHaveLength(2);
    expect(await cli(["sandbox", "prune", "--backend", "apptainer"], ws.home)).toBe(0);
    expect(viewMounts(ws.home)).toEqual([]);
    expect(instancesOf(runId)).toEqual([]);
    await waitFor(() => (fuseDaemons(ws.home).length === 0 ? true : undefined), 10_000);
    const runDir = join(runs, runId);
    for (const view of ["checks-copy", "checks-copy-2"]) {
      expect(existsSync(join(runDir, view))).toBe(false);
      expect(existsSync(join(runDir, `${view}.layers`))).toBe(false);
    }
    rmSync(join(ws.taskDir, "slow"));
    expect(await cli(["run", "--resume", runId, "--model", `scripted:${agentFile}`], ws.home)).toBe(0);
    expect(readState(join(runDir, "state.json")).outcome?.status).toBe("passed");
    const history = readHistory(join(runDir, "history.jsonl"));
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
    expect(history.filter((e) => e.type === "sandbox_died" || e.type === "limit")).toEqual([]);
    expect(instancesOf(runId)).toEqual([]);
    expect(viewMounts(ws.home)).toEqual([]);
    expect(fuseDaemons(ws.home)).toEqual([]);
  });
});
