// Attacker a37d on Apptainer (INSIDE the harness, a non-root runner: fuse-overlayfs views, every
// instance under the same host uid), issue 37 as changed by 213817e: the next run stage's view and
// sandbox are made ready while a check runs. What held: check 1's code, beside check 2's
// already-started instance (two check instances of the run seen at once), sees no process of it
// (its lurker would have written 42 into that instance's /task and ptrace-seized it), and what it
// leaves (/tmp, /var/tmp, /dev/shm, its view, unix and abstract sockets, System V objects, a kernel
// key in its user keyring) reaches neither check 2 (its verifier fails on 41 with its own status;
// another user, PID, network, IPC and mount namespace), nor the compare stage, nor the delivered
// folder. The scripted agent is labelled (no real LLM); helpers in test/attack/a37d-run.ts.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { sifFileName } from "../../../runner/sandbox/apptainer.ts";
import {
  CHEAT,
  checkEvent,
  compareOutput,
  probeReport,
  runAhead,
  viewMounts,
} from "../../attack/a37d-run.ts";

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
    const marks = probe.marks as Record<string, unknown>;
    // The key was made (no seccomp refusal here): it stays in check 1's own user namespace.
    expect(marks.key_user).toBeGreaterThan(0);
    expect(probe.unix).toEqual(expect.arrayContaining(["@a37d", "/tmp/a37d.sock"]));
    const second = checkEvent(run, "root/check-2");
    expect([second.passed, second.exitCode]).toEqual([false, 1]);
    expect(second.output).toContain("LOOK marks: none");
    expect(second.output).toContain("LOOK answer '41'");
    const ns = probe.ns as Record<string, string>;
    for (const kind of ["user", "pid", "net", "ipc", "mnt"]) expect(second.output).not.toContain(ns[kind]);
    expect(checkEvent(run, "root/check-3").passed).toBe(true);
    expect(compareOutput(run)).toContain("LOOK marks: none");
    expect(readdirSync(run.ws.taskDir).sort()).toEqual([
      "Makefile",
      "answer.txt",
      "checks",
      "probe.py",
      "task.md",
    ]);
    expect(viewMounts(run.ws.home)).toEqual([]);
    const instances = execFileSync("apptainer", ["instance", "list"], { encoding: "utf8" });
    expect(instances).not.toContain(run.result.runId.replace(/[^A-Za-z0-9_.-]/g, "_"));
  });
});
