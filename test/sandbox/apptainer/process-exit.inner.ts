// Every way a run ends also ends `scifi run` on Apptainer (issue 32), INSIDE the harness as the
// non-root user: the real CLI, a scripted model, and the preload that says whether the process ended
// by itself with nothing open (test/run/process-exit.ts). The Docker twin is
// test/run/process-exit.e2e.test.ts.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { sifFileName } from "../../../runner/sandbox/apptainer.ts";
import { fixture, workspace } from "../../run/harness.ts";
import { EXIT_BOUND_MS, exitScript, FIX_COUNTER, lastEvent, runCli, shown } from "../../run/process-exit.ts";

const IMAGE = "scifi-sci:local";

function task(): ReturnType<typeof workspace> {
  const ws = workspace("verilator-counter-debug");
  writeFileSync(ws.sam, readFileSync(ws.sam, "utf8").replace(/^allow_commands: .*\n/m, ""));
  return ws;
}

/** The instances of this user still running (each test's run must leave none). */
function instances(): string[] {
  const out = execFileSync("apptainer", ["instance", "list", "--json"], { encoding: "utf8" });
  return ((JSON.parse(out || "{}") as { instances?: { instance: string }[] }).instances ?? []).map(
    (i) => i.instance,
  );
}

describe("every outcome ends `scifi run` (apptainer, inside the harness)", { timeout: 420_000 }, () => {
  beforeAll(() => {
    expect(process.getuid?.()).not.toBe(0);
    const sif = join(process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif", sifFileName(IMAGE));
    expect(existsSync(sif), `no SIF for ${IMAGE} at ${sif}`).toBe(true);
  });

  it("a tool call that timed out: the run passes and the process ends by itself, nothing open", async () => {
    const ws = task();
    const script = exitScript([
      { name: "bash", input: { command: "sleep 60", timeout_sec: 2 } },
      FIX_COUNTER,
    ]);
    const run = await runCli(ws, script, { backend: "apptainer" });
    expect(run.code, shown(run)).toBe(0);
    expect(run.stdout).toMatch(/^PASSED: /);
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(run.openAtExit, shown(run)).toEqual([]);
    expect(readFileSync(join(String(run.runDir), "audit.jsonl"), "utf8")).toContain("killed (timeout)");
    expect(instances()).toEqual([]);
  });

  it("a quota kill: the run fails on the quota and the process ends by itself, nothing open", async () => {
    const ws = task();
    const site = join(ws.root, "site-policy.yaml");
    writeFileSync(site, "maxTaskFolder: 16M\n");
    const fill = "dd if=/dev/zero of=big.bin bs=1M count=64 2>&1; sync; sleep 30";
    const run = await runCli(ws, exitScript([{ name: "bash", input: { command: fill } }]), {
      backend: "apptainer",
      sitePolicy: site,
    });
    expect(run.code, shown(run)).toBe(1);
    expect(run.stdout).toMatch(/^FAILED: task-folder quota: /);
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(run.openAtExit, shown(run)).toEqual([]);
    expect(instances()).toEqual([]);
  });

  it("SIGTERM during a command: the instance is stopped and the process exits 143 within the bound", async () => {
    const ws = task();
    // A hidden check asset: taken out of the task folder at start, back after the run's own exit,
    // which a signal runs too (issue 41, a41d; the Docker twin is test/run/a41d-sigterm-leftovers).
    writeFileSync(
      ws.sam,
      readFileSync(ws.sam, "utf8").replace(
        /^(check_assets: .*\n)/m,
        "$1hidden_assets: [checks/compare_trace.py]\n",
      ),
    );
    const hidden = join(ws.taskDir, "checks", "compare_trace.py");
    const run = await runCli(ws, exitScript([{ name: "bash", input: { command: "sleep 120" } }]), {
      backend: "apptainer",
      signal: "SIGTERM",
      when: (stderr) => /phase work/.test(stderr),
      delayMs: 4_000,
    });
    expect(run.code, shown(run)).toBe(143);
    expect(run.stderr).toMatch(/SIGTERM: stopping the sandbox; continue with: scifi run --resume /);
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(instances()).toEqual([]);
    expect(lastEvent(run)?.type).not.toBe("run_end");
    expect(existsSync(hidden), `the hidden asset is not back in the task folder\n${shown(run)}`).toBe(true);
  });

  it("SIGTERM after the verdict ends a process that something still holds open", async () => {
    const ws = workspace("verilator-counter-debug");
    const run = await runCli(ws, fixture("verilator-pass.yaml"), {
      backend: "apptainer",
      holdOpen: true,
      signal: "SIGTERM",
    });
    expect(run.stdout).toMatch(/^PASSED: /);
    expect(run.code, shown(run)).toBe(143);
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(lastEvent(run)).toMatchObject({ type: "run_end", outcome: "passed" });
    expect(instances()).toEqual([]);
  });
});
