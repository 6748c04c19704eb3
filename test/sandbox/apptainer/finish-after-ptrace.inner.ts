// Issue 37 acceptance on Apptainer (inside the harness as the non-root user: the sandbox runs as the
// runner's own uid, so a process that outlived its instance could ptrace the next): a `finish`
// request after a ptrace cheat; see test/run/adversarial/finish-ptrace-scenario.ts.
import { describe, it } from "vitest";
import {
  finishShowsTrueResults,
  ptraceCheatIsNeverConfirmed,
} from "../../run/adversarial/finish-ptrace-scenario.ts";

describe("approval: [finish] after a ptrace cheat (apptainer)", { timeout: 300_000 }, () => {
  it("the cheat fails on the verifiers' own status, and no one is asked to confirm it", async () => {
    await ptraceCheatIsNeverConfirmed("apptainer");
  });

  it("a process left to rewrite later verifiers' status: the request shows each check's true exit code and output", async () => {
    await finishShowsTrueResults("apptainer");
  });
});
