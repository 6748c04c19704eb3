// Resolve, never replay (Apptainer, inside the harness as the non-root user): see
// test/run/gates/grant-scenario.ts.
import { describe, it } from "vitest";
import { SWAPS, swappedMountIsRefused } from "../../run/gates/grant-scenario.ts";

describe("grant resolved at every sandbox start (apptainer)", { timeout: 300_000 }, () => {
  for (const swap of SWAPS) {
    it(`a mount source swapped for a link to ${swap.to} while the work sandbox runs is not bound by the check sandbox`, async () => {
      await swappedMountIsRefused("apptainer", swap);
    });
  }
});
