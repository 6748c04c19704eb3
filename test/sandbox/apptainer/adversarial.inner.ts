// Issue 13 on Apptainer: the same scripted attacks and honest controls as the Docker suite
// (test/run/adversarial/scenarios.ts), run through the whole loop with backend "apptainer", INSIDE
// the harness as the non-root user. The task needs a compiler and Python: the scientific image's SIF
// (scifi-sci:local, the site policy's default image), which test/sandbox/apptainer.test.ts makes.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { sifFileName } from "../../../runner/sandbox/apptainer.ts";
import { scenarios } from "../../run/adversarial/scenarios.ts";
import { runAndVerify } from "../../run/adversarial/workspace.ts";

const IMAGE = "scifi-sci:local";

describe("checks nobody can fool (apptainer, inside the harness)", { timeout: 180_000 }, () => {
  beforeAll(() => {
    expect(process.getuid?.()).not.toBe(0);
    const sif = join(process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif", sifFileName(IMAGE));
    expect(
      existsSync(sif),
      `no SIF for ${IMAGE} at ${sif}: bash scripts/apptainer-harness.sh sif ${IMAGE}`,
    ).toBe(true);
  });

  for (const scenario of scenarios) {
    it(scenario.name, async () => {
      await runAndVerify(scenario, "apptainer");
    });
  }
});
