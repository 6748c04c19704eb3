// Issue 13 on Docker: scripted agents that try to fool the checks, and honest controls that pass.
// The scenarios (and the reasons each must fail) are in test/run/adversarial/scenarios.ts; the same
// list runs on Apptainer in test/sandbox/apptainer/adversarial.inner.ts.
import { beforeAll, describe, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { scenarios } from "./adversarial/scenarios.ts";
import { runAndVerify } from "./adversarial/workspace.ts";
import { ensureImage } from "./harness.ts";

describe.skipIf(!hasEngine("docker"))("checks nobody can fool (docker)", { timeout: 180_000 }, () => {
  beforeAll(() => ensureImage(), 1_800_000);

  for (const scenario of scenarios) {
    it(scenario.name, async () => {
      await runAndVerify(scenario, "docker");
    });
  }
});
