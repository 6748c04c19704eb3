// Resolve, never replay (Docker): see test/run/gates/grant-scenario.ts.
import { beforeAll, describe, it } from "vitest";
import { hasEngine } from "../../helpers/engines.ts";
import { ensureImage } from "../harness.ts";
import { SWAPS, swappedMountIsRefused } from "./grant-scenario.ts";

describe.skipIf(!hasEngine("docker"))("grant resolved at every sandbox start (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);
  for (const swap of SWAPS) {
    it(`a mount source swapped for a link to ${swap.to} while the work sandbox runs is not bound by the check sandbox`, async () => {
      await swappedMountIsRefused("docker", swap);
    }, 300_000);
  }
});
