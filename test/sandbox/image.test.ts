// The local scientific image, through the real Docker sandbox: the toolset answers, and a Verilator
// testbench, a gfortran program and the Python stack build and run inside a default-deny sandbox.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TASK_MOUNT } from "../../runner/policy/spec.ts";
import { createDockerBackend } from "../../runner/sandbox/docker.ts";
import type { Sandbox } from "../../runner/sandbox/types.ts";
import { hasEngine } from "../helpers/engines.ts";
import { taskFolderSpec } from "../helpers/spec.ts";

const IMAGE = "scifi-sci:local";

describe.skipIf(!hasEngine("docker"))(`image ${IMAGE}`, () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    // Cached: seconds when the image is up to date (CI builds it in its own step first).
    execFileSync("bash", ["scripts/build-image.sh"], { stdio: "inherit" });
    const taskDir = mkdtempSync(join(tmpdir(), "scifi-image-"));
    const spec = taskFolderSpec(
      { runId: `image-${process.pid}-${Date.now()}`, image: IMAGE, taskDir },
      { cpus: 2, memoryBytes: 2 * 1024 ** 3, pidsLimit: 512, labels: { "scifi.test": "image" } },
    );
    sandbox = await createDockerBackend().start(spec);
  }, 1_800_000); // a first build (no cache) takes ten minutes or more

  afterAll(async () => {
    await sandbox?.stop();
  });

  it("says plainly that ROOT is absent (label and /etc/scifi-image)", async () => {
    const info = await new Docker().getImage(IMAGE).inspect();
    expect(info.Config.Labels?.["scifi.root"]).toBe("absent");
    expect((await sandbox.exec("cat /etc/scifi-image")).stdout).toContain("ROOT: absent");
    expect((await sandbox.exec("command -v root-config root || echo none")).stdout).toBe("none\n");
  });

  it("has verilator, gfortran and the Python science stack", async () => {
    const verilator = await sandbox.exec(["verilator", "--version"]);
    expect(verilator.stdout).toMatch(/^Verilator \d+\.\d+/);
    const gfortran = await sandbox.exec(["gfortran", "--version"]);
    expect(gfortran.stdout).toMatch(/^GNU Fortran/);
    const py = await sandbox.exec(
      ["python3", "-c", "import numpy, scipy, pandas, matplotlib, h5py; print('ok')"],
      {
        timeoutMs: 120_000,
      },
    );
    expect(py.stderr).toBe("");
    expect(py.stdout).toBe("ok\n");
  });

  it("builds and runs a Verilator testbench", async () => {
    await sandbox.writeFile(
      "hw/counter.v",
      [
        "module counter(input clk, input rst, output reg [7:0] count);",
        "  always @(posedge clk) if (rst) count <= 0; else count <= count + 1;",
        "endmodule",
        "",
      ].join("\n"),
    );
    await sandbox.writeFile(
      "hw/tb.cpp",
      [
        '#include "Vcounter.h"',
        '#include "verilated.h"',
        "#include <cstdio>",
        "int main(int argc, char** argv) {",
        "  Verilated::commandArgs(argc, argv);",
        "  Vcounter* top = new Vcounter;",
        "  top->rst = 1; top->clk = 0; top->eval(); top->clk = 1; top->eval();",
        "  top->rst = 0;",
        "  for (int i = 0; i < 10; i++) { top->clk = 0; top->eval(); top->clk = 1; top->eval(); }",
        '  printf("count=%d\\n", top->count);',
        "  top->final(); delete top; return 0;",
        "}",
        "",
      ].join("\n"),
    );
    const build = await sandbox.exec(
      "verilator --cc counter.v --exe tb.cpp --build -j 2 -Wall > build.log 2>&1 || { tail -30 build.log; exit 1; }",
      {
        cwd: `${TASK_MOUNT}/hw`,
        timeoutMs: 400_000,
      },
    );
    expect(build.stdout + build.stderr).toBe("");
    expect(build.exitCode).toBe(0);
    const runResult = await sandbox.exec(["./obj_dir/Vcounter"], { cwd: `${TASK_MOUNT}/hw` });
    expect(runResult.stdout).toBe("count=10\n");
  }, 420_000);

  it("builds and runs a gfortran program", async () => {
    await sandbox.writeFile(
      "f/sum.f90",
      [
        "program sum_to_hundred",
        "  implicit none",
        "  integer :: i, total",
        "  total = 0",
        "  do i = 1, 100",
        "    total = total + i",
        "  end do",
        "  print '(A,I0)', 'sum=', total",
        "end program sum_to_hundred",
        "",
      ].join("\n"),
    );
    const r = await sandbox.exec("gfortran -O2 -o sum sum.f90 && ./sum", {
      cwd: `${TASK_MOUNT}/f`,
      timeoutMs: 120_000,
    });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("sum=5050\n");
  }, 130_000);

  it("writes HDF5 and a matplotlib figure into the task folder", async () => {
    const script = [
      "import h5py, numpy as np, matplotlib.pyplot as plt",
      "x = np.linspace(0, 1, 11)",
      "with h5py.File('/task/data.h5', 'w') as f: f['x'] = x",
      "with h5py.File('/task/data.h5') as f: print(round(float(f['x'][:].sum()), 6))",
      "plt.plot(x, x**2); plt.savefig('/task/fig.png')",
    ].join("\n");
    const r = await sandbox.exec(["python3", "-c", script], { timeoutMs: 120_000 });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("5.5\n");
    const png = readFileSync(join(sandbox.spec.taskDir, "fig.png"));
    expect(png.subarray(1, 4).toString()).toBe("PNG");
  }, 130_000);
});
