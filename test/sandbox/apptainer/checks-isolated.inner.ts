// Issue 37, item 1 on Apptainer: the checks-that-share-nothing scenarios of the Docker suite
// (test/run/adversarial/isolation-scenarios.ts), run through the whole loop with backend
// "apptainer", INSIDE the harness as the non-root user (the sandbox runs as the runner's own uid:
// a process left by one check could ptrace the next if it outlived its instance).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { sifFileName } from "../../../runner/sandbox/apptainer.ts";
import { isolationScenarios } from "../../run/adversarial/isolation-scenarios.ts";
import { runAndVerify } from "../../run/adversarial/workspace.ts";

const IMAGE = "scifi-sci:local";

describe("checks that share nothing (apptainer, inside the harness)", { timeout: 180_000 }, () => {
  beforeAll(() => {
    expect(process.getuid?.()).not.toBe(0);
    const sif = join(process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif", sifFileName(IMAGE));
    expect(
      existsSync(sif),
      `no SIF for ${IMAGE} at ${sif}: bash scripts/apptainer-harness.sh sif ${IMAGE}`,
    ).toBe(true);
  });

  for (const scenario of isolationScenarios) {
    it(scenario.name, async () => {
      await runAndVerify(scenario, "apptainer");
    });
  }
});
