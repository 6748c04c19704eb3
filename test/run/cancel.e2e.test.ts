// A cancel (the daemon's `scifi cancel`: the run's signal aborted with RunCancelled) ends a model
// call in flight at once: here the pre-scan's, whose scripted answer would take 60 s. Before, only
// the work and review calls carried the signal; a structured call ran to its end first.
import { beforeAll, describe, expect, it } from "vitest";
import { runTask } from "../../runner/run/setup.ts";
import { RunCancelled } from "../../runner/run-ending.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, workspace } from "./harness.ts";

describe.skipIf(!hasEngine("docker"))("a cancel during a model call", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("ends the run cancelled within seconds, not when the call returns", async () => {
    const ws = workspace("verilator-counter-debug");
    const cancel = new AbortController();
    const started = Date.now();
    let cancelledAt = 0;
    const result = await runTask({
      home: ws.home,
      task: ws.sam,
      backend: "docker",
      model: `scripted:${fixture("prescan-slow.yaml")}`,
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      signal: cancel.signal,
      onStatus: (s) => {
        if (s.phase === "prescan" && cancelledAt === 0) {
          cancelledAt = Date.now();
          setTimeout(() => cancel.abort(new RunCancelled("cancelled by the operator while it ran")), 500);
        }
      },
    });
    expect(cancelledAt).toBeGreaterThan(0);
    expect(result.outcome).toEqual({ status: "cancelled", reason: "cancelled by the operator while it ran" });
    expect(Date.now() - cancelledAt).toBeLessThan(15_000);
    expect(Date.now() - started).toBeLessThan(40_000);
  }, 120_000);
});
