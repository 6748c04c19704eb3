// scifi make-skill on a real scripted run (Docker): its model gets the commands the run's work
// agent ran, the files it changed and how each ended, read from the run's audit tape (capped).
import { beforeAll, describe, expect, it } from "vitest";
import { runMakeSkill } from "../../runner/helpers/make-skill/command.ts";
import { readRun } from "../../runner/helpers/make-skill/runs.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, runScripted, workspace } from "../run/harness.ts";

describe.skipIf(!hasEngine("docker"))("make-skill sees what the run did", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("the draft request holds the run's commands, files and outcomes", async () => {
    const ws = workspace("gfortran-build-run");
    const { result } = await runScripted(ws, "gfortran-pass.yaml");
    expect(result.outcome.status).toBe("passed");
    const record = readRun(result.dir);
    expect(record.actions).toContain("bash `make` -> error");
    const err: string[] = [];
    const code = await runMakeSkill([result.runId], {
      model: `scripted:${fixture("../helpers/make-skill/actions.yaml")}`,
      env: { ...process.env, SCIFI_HOME: ws.home },
      out: () => {},
      err: (t) => err.push(t),
    });
    expect(err.join("")).toBe("");
    expect(code).toBe(0);
  }, 300_000);
});
