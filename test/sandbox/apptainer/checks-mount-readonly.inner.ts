// Issue 37 on Apptainer (inside the harness as the non-root user): a declared `rw` mount is
// read-only in run stages; see test/run/checks/mount-checks-scenario.ts.
import { describe, it } from "vitest";
import {
  checkWritesToMountDoNotCarry,
  honestMountRunPasses,
} from "../../run/checks/mount-checks-scenario.ts";

describe("a declared rw mount in run stages (apptainer)", { timeout: 300_000 }, () => {
  it("control: the work writes the mount and the run passes", async () => {
    await honestMountRunPasses("apptainer");
  });

  it("what check 1's code writes to the mount never reaches check 2 or the host", async () => {
    await checkWritesToMountDoNotCarry("apptainer");
  });
});
