// AE-8 on Docker (test/loop/self-death.ts; the Apptainer half runs in the harness).
import { beforeAll, describe, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "./harness.ts";
import { agentEndsItsSandbox } from "./self-death.ts";

describe.skipIf(!hasEngine("docker"))("an agent that tries to end its own sandbox (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("is judged: no signal ends the sandbox, an OOM it causes fails only that command", async () => {
    await agentEndsItsSandbox("docker");
  }, 400_000);
});
