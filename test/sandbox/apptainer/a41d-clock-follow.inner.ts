// A running command follows the run's clock on Apptainer (a41d-walltime-raise-running-command, the
// Docker twin is in test/tools/sandbox.e2e.test.ts), INSIDE the harness as the non-root user.
import { afterAll, beforeAll, describe } from "vitest";
import { createApptainerBackend } from "../../../runner/sandbox/apptainer.ts";
import type { Sandbox } from "../../../runner/sandbox/types.ts";
import { commandFollowsClock } from "../../tools/clock-follow.ts";
import { taskSpec } from "./fixtures.ts";

describe("the bash tool follows the run's clock (apptainer)", { timeout: 120_000 }, () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await createApptainerBackend().start(await taskSpec());
  });
  afterAll(async () => sandbox?.stop());
  commandFollowsClock(() => sandbox);
});
