// AE-8 on Docker (test/run/self-death.ts; the Apptainer half runs in the harness).
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, runScripted, workspace } from "./harness.ts";
import { agentEndsItsSandbox } from "./self-death.ts";

describe.skipIf(!hasEngine("docker"))("an agent that tries to end its own sandbox (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("is judged: no signal ends the sandbox, an OOM it causes fails only that command", async () => {
    await agentEndsItsSandbox("docker");
  }, 400_000);

  // A pass that grows its prompt past the model's window gets HTTP 400 from a real provider.
  it("a request the provider refuses as invalid (400) ends the run failed, not without an outcome", async () => {
    const { result } = await runScripted(workspace("verilator-counter-debug"), "work-400.yaml");
    expect(result.outcome.status).toBe("failed");
    expect(result.outcome.reason).toMatch(/^model refused the request: .*HTTP 400.*prompt is too long/);
  }, 200_000);
});
