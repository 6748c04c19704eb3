// Issue 37 on Docker: a declared `rw` mount is read-only in run stages, so nothing a check writes
// there reaches the next check (scenario in test/run/checks/mount-checks-scenario.ts; the same runs on
// Apptainer in test/sandbox/apptainer/checks-mount-readonly.inner.ts).
import { beforeAll, describe, it } from "vitest";
import { hasEngine } from "../../helpers/engines.ts";
import { ensureImage } from "../harness.ts";
import { checkWritesToMountDoNotCarry, honestMountRunPasses } from "./mount-checks-scenario.ts";

describe.skipIf(!hasEngine("docker"))(
  "a declared rw mount in run stages (docker)",
  { timeout: 240_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("control: the work writes the mount and the run passes", async () => {
      await honestMountRunPasses("docker");
    });

    it("what check 1's code writes to the mount never reaches check 2 or the host", async () => {
      await checkWritesToMountDoNotCarry("docker");
    });
  },
);
