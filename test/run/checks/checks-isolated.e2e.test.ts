// Issue 37, item 1 on Docker: checks that share nothing (scenarios in
// test/run/adversarial/isolation-scenarios.ts; the same list runs on Apptainer in
// test/sandbox/apptainer/checks-isolated.inner.ts).
import { beforeAll, describe, it } from "vitest";
import { hasEngine } from "../../helpers/engines.ts";
import { isolationScenarios } from "../adversarial/isolation-scenarios.ts";
import { runAndVerify } from "../adversarial/workspace.ts";
import { ensureImage } from "../harness.ts";

describe.skipIf(!hasEngine("docker"))("checks that share nothing (docker)", { timeout: 180_000 }, () => {
  beforeAll(() => ensureImage(), 1_800_000);

  for (const scenario of isolationScenarios) {
    it(scenario.name, async () => {
      await runAndVerify(scenario, "docker");
    });
  }
});
