// Issue 37 acceptance on Docker: a `finish` request after a ptrace cheat (scenarios in
// test/run/adversarial/finish-ptrace-scenario.ts; the same on Apptainer in
// test/sandbox/apptainer/finish-after-ptrace.inner.ts).
import { beforeAll, describe, it } from "vitest";
import { hasEngine } from "../../helpers/engines.ts";
import {
  finishShowsTrueResults,
  ptraceCheatIsNeverConfirmed,
} from "../adversarial/finish-ptrace-scenario.ts";
import { ensureImage } from "../harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "approval: [finish] after a ptrace cheat (docker)",
  { timeout: 240_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("the cheat fails on the verifiers' own status, and no one is asked to confirm it", async () => {
      await ptraceCheatIsNeverConfirmed("docker");
    });

    it("a process left to rewrite later verifiers' status: the request shows each check's true exit code and output", async () => {
      await finishShowsTrueResults("docker");
    });
  },
);
