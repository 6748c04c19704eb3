// The README's scripted-model example, run as the README says (`scifi run ... --model
// scripted:demo.yaml` on a copy of the Gaussian-fit example, real Docker sandbox, the runner's own
// checks): it passes, and the terminal says the run was scripted.
import { execFile } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "./helpers/engines.ts";
import { readmeScript } from "./helpers/readme.ts";
import { ensureImage, REPO, workspace } from "./run/harness.ts";

const exec = promisify(execFile);

describe.skipIf(!hasEngine("docker"))("the README's scripted example (docker)", { timeout: 300_000 }, () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("drives tasks/examples/root-gaussian-fit to a PASS, labelled scripted", async () => {
    const ws = workspace("root-gaussian-fit");
    const script = join(ws.root, "demo.yaml");
    writeFileSync(script, readmeScript());
    const { stdout } = await exec(
      process.execPath,
      [join(REPO, "bin/scifi.js"), "run", ws.sam, "--model", `scripted:${script}`],
      { env: { ...process.env, SCIFI_HOME: ws.home }, timeout: 240_000 },
    );
    expect(stdout).toMatch(/^PASSED: .*\[SCRIPTED model: replies come from .*demo\.yaml\]$/m);
    const fit = JSON.parse(readFileSync(join(ws.taskDir, "fit.json"), "utf8")) as { method: string };
    expect(fit.method).toBe("scipy");
    const report = /^report: (\S+)/m.exec(stdout)?.[1] ?? "";
    expect(existsSync(report)).toBe(true);
  });
});
