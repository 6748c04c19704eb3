// AE-8b on Apptainer, INSIDE the harness as the non-root user (attacker session on AE-8, written
// from docs/apptainer.md and docs/loop.md "A sandbox that dies"): what a failing work agent did in
// its instance that HELD: the run ends with a verdict, never throws, no death counted as one from
// outside (test/attack/ae8b-held.e2e.test.ts has the Docker half; what broke:
// test/open/ae8b-*.pending.ts).
import { describe, expect, it } from "vitest";
import { evalStatus, type Probe, probe } from "../../attack/ae8b-probe.ts";

const backend = "apptainer" as const;
const OK = "echo ok > out.txt; printf 'echo ok\\n' > run.sh; ";

function judged(p: Probe, status: "pass" | "fail"): void {
  expect(p.thrown).toBeUndefined();
  expect(p.history.some((e) => e.type === "verdict")).toBe(true);
  expect(p.history.filter((e) => e.type === "sandbox_died" && e.inside !== true)).toEqual([]);
  expect(evalStatus(p)).toBe(status);
}

describe("AE-8b: what a failing agent does in its instance is judged (apptainer)", {
  timeout: 300_000,
}, () => {
  it("kill -9 -1 (appinit's helpers too) and kill -STOP -1: the next calls run, an honest run passes", async () => {
    const p = await probe({
      backend,
      work: [`${OK} kill -9 -1; echo after`, "kill -STOP -1; echo after", "echo next"],
      limits: { bashTimeoutSec: 5 },
      reviewPass: true,
    });
    judged(p, "pass");
  });

  it("chmod 000 of a check asset's folder, then TERM to the init: the fresh instance starts, the run is judged", async () => {
    const p = await probe({ backend, work: [`${OK} chmod 000 checks; kill -TERM 1; sleep 2`, "echo next"] });
    judged(p, "fail");
    expect(p.history.filter((e) => e.type === "sandbox_died").every((e) => e.inside === true)).toBe(true);
  });

  it("a 2,100-deep folder chain, an unreadable file and folder (no hidden assets): an honest run passes", async () => {
    const deep = `python3 -c "
import os
os.mkdir('deep'); os.chdir('deep')
for i in range(2100):
    os.mkdir('d'); os.chdir('d')"`;
    const p = await probe({
      backend,
      work: [`${OK} ${deep}; echo s > f; chmod 000 f; mkdir r; echo x > r/a; chmod 000 r`],
      reviewPass: true,
    });
    judged(p, "pass");
  });

  it("approval: [delete]: a start file deleted and its folder made 000: put back or refused, the run ends blocked, not an error", async () => {
    const p = await probe({
      backend,
      work: [`${OK} rm sub/data.txt; chmod 000 sub`, "ls -la sub; echo next"],
      files: { "sub/data.txt": "precious\n" },
      front: "approval: [delete]\napproval_timeout: 5s",
    });
    expect(p.thrown).toBeUndefined();
    expect(p.result?.outcome.status).toBe("blocked");
    expect(evalStatus(p)).toBe("fail");
  });
});
