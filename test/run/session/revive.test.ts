// The phase sandbox's death rules (runner/run/session/revive.ts), on a sandbox double whose deaths the test
// decides: the engine e2e tests (test/run/sandbox-death.e2e.test.ts, self-death.ts) show the real
// deaths; this shows every branch, including the ones timing makes rare there.
import { describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../../runner/policy/spec.ts";
import { revivable, SandboxLost } from "../../../runner/run/session/revive.ts";
import { type ExecResult, type Sandbox, SandboxError } from "../../../runner/sandbox/types.ts";

type Step = "ok" | "dies-under" | "dead-before";

/** Sandboxes that each run the next scripted step; `inside` says who a death is blamed on. */
function world(steps: Step[], inside: boolean, deadAtStart: number[] = []) {
  const runs: { sandbox: number; step: Step }[] = [];
  let opened = 0;
  const make = (): Sandbox => {
    const id = opened++;
    let alive = !deadAtStart.includes(id);
    const result = (exitCode: number): ExecResult => ({
      exitCode,
      stdout: "out\n",
      stderr: "",
      timedOut: false,
      truncated: false,
      durationMs: 5,
    });
    return {
      backend: "double",
      spec: { runId: `run-${id}` } as SandboxSpec,
      exec: async () => {
        if (!alive) throw new SandboxError(`sandbox ${id} is not running`);
        const step = steps.shift() ?? "ok";
        runs.push({ sandbox: id, step });
        if (step === "ok") return result(0);
        alive = false;
        if (step === "dies-under") return result(137);
        throw new SandboxError(`sandbox ${id} is not running`);
      },
      readFile: async () => Buffer.from(""),
      writeFile: async () => undefined,
      stop: async () => {
        alive = false;
      },
      alive: async () => alive,
      endedFromInside: async () => inside,
    };
  };
  const deaths: { deaths: number; inside: boolean }[] = [];
  const sandbox = revivable(make(), {
    open: async () => make(),
    onDeath: (n, _detail, byInside) => deaths.push({ deaths: n, inside: byInside }),
  });
  return { sandbox, runs, deaths, opened: () => opened };
}

describe("revivable: deaths from outside", () => {
  it("one death: the call runs again on a fresh sandbox and its result stands", async () => {
    const w = world(["dies-under", "ok"], false);
    const r = await w.sandbox.exec("make");
    expect(r.exitCode).toBe(0);
    expect(w.runs.map((x) => x.sandbox)).toEqual([0, 1]);
    expect(w.deaths).toEqual([{ deaths: 1, inside: false }]);
  });

  it("a second death in the phase ends the run (SandboxLost: infrastructure)", async () => {
    const w = world(["dies-under", "dies-under"], false);
    await expect(w.sandbox.exec("make")).rejects.toBeInstanceOf(SandboxLost);
    expect(w.deaths.map((d) => d.deaths)).toEqual([1, 2]);
  });

  it("a fresh sandbox dead before its first call is a death from outside too", async () => {
    const w = world(["dies-under"], false, [1, 2]);
    await expect(w.sandbox.exec("make")).rejects.toThrow(/before its first call/);
    expect(w.deaths).toEqual([
      { deaths: 1, inside: false },
      { deaths: 2, inside: false },
    ]);
  });
});

describe("revivable: deaths the sandbox's own may cause (AE-8)", () => {
  it("a command its sandbox died under fails with why, is not run again, and the next call gets a fresh one", async () => {
    const w = world(["dies-under", "ok"], true);
    const r = await w.sandbox.exec("kill -TERM 1");
    expect(r.exitCode).toBe(137);
    expect(r.stdout).toBe("out\n");
    expect(r.stderr).toMatch(/may have ended it .* counts as failed and is not run again/);
    expect(w.runs).toHaveLength(1);
    expect((await w.sandbox.exec("echo next")).exitCode).toBe(0);
    expect(w.runs.map((x) => x.sandbox)).toEqual([0, 1]);
    expect(w.deaths).toEqual([{ deaths: 1, inside: true }]);
  });

  it("never ends the run, however often: each death fails only its own command", async () => {
    const w = world(Array(6).fill("dies-under"), true);
    for (let i = 0; i < 6; i++) expect((await w.sandbox.exec("kill -TERM 1")).exitCode).toBe(137);
    expect(w.deaths.map((d) => d.deaths)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(w.deaths.every((d) => d.inside)).toBe(true);
  });

  it("dead before the call could run (an earlier command's doing): that call runs again once", async () => {
    // The first call's sandbox dies just after it returned; the next call meets a dead engine.
    const w = world(["ok", "ok"], true);
    expect((await w.sandbox.exec("fill memory")).exitCode).toBe(0);
    w.runs.length = 0;
    // Kill it between the calls, as an OOM after the command returned does.
    await (w.sandbox as unknown as { stop(): Promise<void> }).stop();
    const r = await w.sandbox.exec("verilator");
    expect(r.exitCode).toBe(0);
    expect(w.runs).toEqual([{ sandbox: 1, step: "ok" }]);
  });

  it("a call the engine cannot run twice in a row fails instead of looping", async () => {
    const w = world(["dead-before", "dead-before", "ok"], true);
    const r = await w.sandbox.exec("kill -TERM 1");
    expect(r.exitCode).toBe(137);
    expect(w.runs.map((x) => x.sandbox)).toEqual([0, 1]);
    expect((await w.sandbox.exec("echo next")).exitCode).toBe(0);
  });

  it("host-side file access after such a death runs again on the fresh sandbox", async () => {
    const w = world(["dies-under"], true);
    await w.sandbox.exec("kill -TERM 1");
    await expect(w.sandbox.readFile("x")).resolves.toEqual(Buffer.from(""));
  });
});
