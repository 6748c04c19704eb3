// A sandbox killed from outside (`docker kill`) is noticed: the runner records it, starts a fresh
// sandbox and repeats the interrupted call; an interrupted check is never counted as failed. A
// sandbox that dies twice in one phase ends the run failed with cause `sandbox` (exit code 4).
import { execFileSync } from "node:child_process";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { EXIT, exitCodeOfOutcome } from "../../runner/exit-codes.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, runScripted, workspace } from "./harness.ts";

/** Kills, once each, the first `times` running containers whose name contains `part` (by id). */
function killer(part: string, times: number): { stop(): void; killed: string[] } {
  const killed: string[] = [];
  const timer = setInterval(() => {
    if (killed.length >= times) return;
    const running = execFileSync("docker", ["ps", "--format", "{{.ID}} {{.Names}}"], { encoding: "utf8" })
      .split("\n")
      .map((line) => line.split(" "))
      .filter(([id, name]) => id && name?.includes(part) && !killed.includes(id));
    for (const [id] of running.slice(0, times - killed.length)) {
      try {
        execFileSync("docker", ["kill", id as string], { stdio: "ignore" });
        killed.push(id as string);
      } catch {
        // it ended by itself meanwhile
      }
    }
  }, 100);
  return { stop: () => clearInterval(timer), killed };
}

let active: ReturnType<typeof killer> | undefined;
afterEach(() => {
  active?.stop();
  active = undefined;
});

describe.skipIf(!hasEngine("docker"))("a sandbox that dies under the run (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("killed during the work pass: a fresh sandbox takes over, the call is repeated, the run passes", async () => {
    const ws = workspace("verilator-counter-debug");
    let killedOnce = false;
    const { result, history } = await runScripted(ws, "verilator-pass.yaml", {
      onStatus: (s) => {
        // At the first step, before its tool call (a bash): that call meets a dead container.
        if (s.phase === "work" && s.step >= 1 && !killedOnce) {
          killedOnce = true;
          execFileSync("docker", ["kill", `scifi-${s.runId}-work1`], { stdio: "ignore" });
        }
      },
    });
    expect(killedOnce).toBe(true);
    expect(result.outcome.status).toBe("passed");
    expect(history.filter((e) => e.type === "sandbox_died")).toMatchObject([{ phase: "work", deaths: 1 }]);
  }, 300_000);

  it("killed while a check runs: the check runs again in a fresh sandbox and is not counted as failed", async () => {
    const ws = workspace("verilator-counter-debug");
    const { result, history } = await runScripted(ws, "verilator-pass.yaml", {
      onStatus: (s) => {
        if (s.phase === "checks" && !active) active = killer(`${s.runId}-checks1`, 1);
      },
    });
    expect(active?.killed).toHaveLength(1);
    expect(result.outcome.status).toBe("passed");
    expect(history.filter((e) => e.type === "sandbox_died")).toMatchObject([{ phase: "checks", deaths: 1 }]);
    const checks = history.filter((e) => e.type === "check");
    expect(checks.every((c) => c.type === "check" && c.passed)).toBe(true);
    // The example's three checks (a run stage, two compare stages), each once.
    expect(checks).toHaveLength(3);
  }, 300_000);

  it("killed twice in one phase: the run ends failed with cause sandbox (exit code 4, not a task failure)", async () => {
    const ws = workspace("verilator-counter-debug");
    const { result, history } = await runScripted(ws, "verilator-pass.yaml", {
      onStatus: (s) => {
        if (s.phase === "checks" && !active) active = killer(`${s.runId}-checks1`, 2);
      },
    });
    expect(active?.killed).toHaveLength(2);
    expect(result.outcome).toMatchObject({ status: "failed", cause: "sandbox" });
    // The second kill may meet the fresh sandbox before its first call: a death from outside either way.
    expect(result.outcome.reason).toMatch(
      /^sandbox: the docker sandbox .* stopped running (under the run|before its first call).*; it died 2 times in one phase$/,
    );
    expect(exitCodeOfOutcome(result.outcome)).toBe(EXIT.sandbox);
    expect(
      history.filter((e) => e.type === "sandbox_died").map((e) => e.type === "sandbox_died" && e.deaths),
    ).toEqual([1, 2]);
    expect(history.some((e) => e.type === "check" && !e.passed)).toBe(false);
  }, 300_000);
});
