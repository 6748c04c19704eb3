// AE-8 on Apptainer, INSIDE the harness as the non-root user (test/run/self-death.ts): the agent's
// `kill -TERM 1` ends the instance (appinit handles signals); the run records it as the agent's,
// goes on in a fresh instance and is judged.
import { describe, it } from "vitest";
import { agentEndsItsSandbox } from "../../run/self-death.ts";

describe("an agent that ends its own instance (apptainer, inside the harness)", { timeout: 300_000 }, () => {
  it("is judged: the death counts against its command, a fresh instance takes the next call", async () => {
    await agentEndsItsSandbox("apptainer");
  });
});
