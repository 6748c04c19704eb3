// Every way a run ends also ends `scifi run` (issue 32), on Docker: the real CLI, a scripted model,
// and a preload that says whether the process ended by itself with nothing left open. A timed-out
// tool call and a quota kill used to leave the engine's exec streams open (the process lived on
// after its verdict), and a signal after the verdict ended nothing.
import { execFileSync } from "node:child_process";
import { readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { newRunId } from "../../runner/run-id.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, workspace } from "./harness.ts";
import { EXIT_BOUND_MS, exitScript, FIX_COUNTER, lastEvent, runCli, shown } from "./process-exit.ts";

/** The verilator example without its command allowlist (the agent's commands must run). */
function task(iterations?: number): ReturnType<typeof workspace> {
  const ws = workspace("verilator-counter-debug", iterations === undefined ? {} : { iterations });
  writeFileSync(ws.sam, readFileSync(ws.sam, "utf8").replace(/^allow_commands: .*\n/m, ""));
  return ws;
}

/** This home's containers (and networks) still there: none may outlive the run. */
function leftovers(home: string): string {
  const label = `label=scifi.home=${realpathSync(home)}`;
  const containers = execFileSync("docker", ["ps", "-aq", "--filter", label], { encoding: "utf8" });
  const networks = execFileSync("docker", ["network", "ls", "-q", "--filter", label], { encoding: "utf8" });
  return `${containers}${networks}`.trim();
}

describe.skipIf(!hasEngine("docker"))("every outcome ends `scifi run` (docker)", { timeout: 420_000 }, () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("a tool call that timed out: the run passes and the process ends by itself, nothing open", async () => {
    const ws = task();
    const script = exitScript([
      { name: "bash", input: { command: "sleep 60", timeout_sec: 2 } },
      FIX_COUNTER,
    ]);
    const run = await runCli(ws, script, { backend: "docker" });
    expect(run.code, shown(run)).toBe(0);
    expect(run.stdout).toMatch(/^PASSED: /);
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(run.openAtExit, shown(run)).toEqual([]);
    expect(readFileSync(join(String(run.runDir), "audit.jsonl"), "utf8")).toContain("killed (timeout)");
    expect(leftovers(ws.home)).toBe("");
  });

  it("a quota kill: the run fails on the quota and the process ends by itself, nothing open", async () => {
    const ws = task();
    const site = join(ws.root, "site-policy.yaml");
    writeFileSync(site, "maxTaskFolder: 16M\n");
    const fill = "dd if=/dev/zero of=big.bin bs=1M count=64 2>&1; sync; sleep 30";
    const run = await runCli(ws, exitScript([{ name: "bash", input: { command: fill } }]), {
      backend: "docker",
      sitePolicy: site,
    });
    expect(run.code, shown(run)).toBe(1);
    expect(run.stdout).toMatch(/^FAILED: task-folder quota: /);
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(run.openAtExit, shown(run)).toEqual([]);
    expect(leftovers(ws.home)).toBe("");
  });

  it("the wall-time limit kills a running command: failed, and the process ends by itself", async () => {
    const ws = task();
    writeFileSync(ws.sam, readFileSync(ws.sam, "utf8").replace(/^walltime: .*$/m, "walltime: 15s"));
    const run = await runCli(ws, exitScript([{ name: "bash", input: { command: "sleep 240" } }]), {
      backend: "docker",
    });
    expect(run.code, shown(run)).toBe(1);
    expect(run.stdout).toContain("wall time limit reached (15 s)");
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(run.openAtExit, shown(run)).toEqual([]);
    expect(leftovers(ws.home)).toBe("");
  });

  it("failed checks at the iteration limit: exit 1, and the process ends by itself", async () => {
    const ws = workspace("verilator-counter-debug", { iterations: 1 });
    const run = await runCli(ws, fixture("verilator-claim-only.yaml"), { backend: "docker" });
    expect(run.code, shown(run)).toBe(1);
    expect(run.stdout).toMatch(/^FAILED: iteration limit reached/);
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(run.openAtExit, shown(run)).toEqual([]);
  });

  it("a blocker: exit 3, and the process ends by itself", async () => {
    const ws = workspace("verilator-counter-debug");
    const run = await runCli(ws, fixture("verilator-failing.yaml"), { backend: "docker" });
    expect(run.code, shown(run)).toBe(3);
    expect(run.stdout).toMatch(/^BLOCKED: /);
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(run.openAtExit, shown(run)).toEqual([]);
  });

  it("the daemon's worker: a timed-out call, then the run passes, and the worker ends by itself", async () => {
    const ws = task();
    const script = exitScript([
      { name: "bash", input: { command: "sleep 60", timeout_sec: 2 } },
      FIX_COUNTER,
    ]);
    const run = await runCli(ws, script, { backend: "docker", workerRunId: newRunId("exit-worker") });
    expect(run.code, shown(run)).toBe(0);
    expect(run.stdout).toMatch(/^passed: /m);
    // Well before the worker's own 10-second forced exit: the process ran out of work by itself.
    expect(run.exitAfterMs, shown(run)).toBeLessThan(5_000);
    expect(run.openAtExit, shown(run)).toEqual([]);
    expect(leftovers(ws.home)).toBe("");
  });

  it("SIGINT during a command: the sandbox is stopped and the process exits 130 within the bound", async () => {
    const ws = task();
    const run = await runCli(ws, exitScript([{ name: "bash", input: { command: "sleep 120" } }]), {
      backend: "docker",
      signal: "SIGINT",
      // The command is running a few seconds after the work phase starts.
      when: (stderr) => /phase work/.test(stderr),
      delayMs: 4_000,
    });
    expect(run.code, shown(run)).toBe(130);
    expect(run.stderr).toMatch(/SIGINT: stopping the sandbox; continue with: scifi run --resume /);
    expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
    expect(leftovers(ws.home)).toBe("");
    // The last completed phase is on disk for the resume; the run has no outcome.
    expect(lastEvent(run)?.type).not.toBe("run_end");
  });

  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s after the verdict ends a process that something still holds open",
    async (signal) => {
      const ws = workspace("verilator-counter-debug");
      const run = await runCli(ws, fixture("verilator-pass.yaml"), {
        backend: "docker",
        holdOpen: true,
        signal,
      });
      expect(run.stdout).toMatch(/^PASSED: /);
      expect(run.code, shown(run)).toBe(signal === "SIGTERM" ? 143 : 130);
      expect(run.exitAfterMs, shown(run)).toBeLessThan(EXIT_BOUND_MS);
      expect(lastEvent(run)).toMatchObject({ type: "run_end", outcome: "passed" });
      expect(leftovers(ws.home)).toBe("");
    },
  );
});
