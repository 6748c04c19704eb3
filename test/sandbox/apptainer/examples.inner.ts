// The shipped examples on Apptainer, run INSIDE the harness as the non-root user, exactly as a
// cluster user would: the whole loop (work, checks and review each in a fresh instance), the
// runner's own checks (the real Verilator testbench, the real gfortran build), scripted models.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { sifFileName } from "../../../runner/sandbox/apptainer.ts";
import { runScripted, workspace } from "../../run/harness.ts";

const IMAGE = "scifi-sci:local";

describe("shipped examples pass on apptainer (inside the harness, non-root)", { timeout: 300_000 }, () => {
  beforeAll(() => {
    expect(process.getuid?.()).not.toBe(0);
    const sif = join(process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif", sifFileName(IMAGE));
    expect(existsSync(sif), `no SIF for ${IMAGE} at ${sif}`).toBe(true);
  });

  it("verilator: the fix passes the runner's testbench", async () => {
    const ws = workspace("verilator-counter-debug");
    const { result, history } = await runScripted(ws, "verilator-pass.yaml", { backend: "apptainer" });
    expect(result.outcome).toEqual({ status: "passed", reason: "every check and review item passed" });
    expect(readFileSync(join(ws.taskDir, "rtl/counter.v"), "utf8")).toContain("LAST = WIDTH'(N - 1);");
    expect(history.filter((e) => e.type === "check").map((e) => e.type === "check" && e.passed)).toEqual([
      true,
      true,
      true,
    ]);
  });

  it("gfortran: the Makefile is fixed and the output matches", async () => {
    const ws = workspace("gfortran-build-run");
    const { result } = await runScripted(ws, "gfortran-pass.yaml", { backend: "apptainer" });
    expect(result.outcome.status).toBe("passed");
    expect(readFileSync(join(ws.taskDir, "results/stats.txt"), "utf8")).toBe(
      readFileSync(join(ws.taskDir, "checks/expected_output.txt"), "utf8"),
    );
  });

  it("sub-SAMs: both children complete before the parent passes", async () => {
    const ws = workspace("two-level-subsams");
    const { result, history } = await runScripted(ws, "subsams-pass.yaml", { backend: "apptainer" });
    expect(result.outcome.status).toBe("passed");
    const order = history.flatMap((e) => (e.type === "node_complete" ? [e.node] : []));
    expect(order).toEqual(["root/1", "root/2", "root"]);
  });
});
