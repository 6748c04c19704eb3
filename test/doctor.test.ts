// `scifi doctor` through the real CLI: the image's tools and versions (iverilog, scikit-learn and
// seaborn included), this host's GPUs with what that means for `gpu:` tasks, the home's models.yaml
// (valid, and whether each entry's API key is set) and SLURM.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hostGpuCount } from "../runner/policy/host-gpus.ts";
import { runScifi } from "./helpers/cli.ts";
import { hasEngine } from "./helpers/engines.ts";

const REPO = join(import.meta.dirname, "..");

interface Item {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
}

async function doctor(home: string, env: NodeJS.ProcessEnv = {}): Promise<Map<string, Item>> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const r = await runScifi(home, ["doctor", "--json"], 120_000);
    return new Map((JSON.parse(r.stdout) as Item[]).map((i) => [i.name, i]));
  } finally {
    for (const key of Object.keys(env)) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  }
}

describe("scifi doctor (real CLI)", () => {
  it("checks models.yaml: missing, invalid, and an entry without its API key", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-doctor-"));
    expect((await doctor(home)).get("models.yaml")).toMatchObject({
      ok: false,
      fix: `cp models.example.yaml ${join(home, "models.yaml")}`,
    });
    writeFileSync(join(home, "models.yaml"), "models: nope\n");
    expect((await doctor(home)).get("models.yaml")?.ok).toBe(false);
    copyFileSync(join(REPO, "models.example.yaml"), join(home, "models.yaml"));
    const item = (await doctor(home, { ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "" })).get("models.yaml");
    expect(item?.detail).toContain("NO API KEY");
  });

  it("says what this host's GPUs mean for gpu: tasks, and checks SLURM", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-doctor-"));
    const items = await doctor(home);
    const gpus = items.get("gpus");
    if (hostGpuCount() === 0)
      expect(gpus?.detail).toMatch(/^none on this host .*refused by plan and run here/);
    else expect(gpus?.detail).toMatch(/^\d+ on this host/);
    const slurm = items.get("slurm");
    expect(slurm).toBeDefined();
    if (slurm?.ok) expect(slurm.detail).toMatch(/^slurm.*partitions: /);
  });

  it.skipIf(!hasEngine("docker"))(
    "lists the image's tools and versions, iverilog, sklearn and seaborn included",
    async () => {
      execFileSync("bash", [join(REPO, "scripts", "build-image.sh")], {
        stdio: "inherit",
        timeout: 1_800_000,
      });
      const home = mkdtempSync(join(tmpdir(), "scifi-doctor-"));
      const tools = (await doctor(home)).get("image tools");
      expect(tools?.ok, tools?.detail).toBe(true);
      for (const tool of [
        "gfortran",
        "verilator",
        "iverilog",
        "python3",
        "numpy",
        "matplotlib",
        "sklearn",
        "seaborn",
      ])
        expect(tools?.detail).toMatch(new RegExp(`(^|, )${tool} \\d`));
    },
    1_800_000,
  );

  it.skipIf(!hasEngine("docker"))(
    "the image simulates Verilog with iverilog and fits with scikit-learn, plots with seaborn",
    () => {
      const script = [
        "cd /tmp",
        `printf 'module t; initial begin $display("sum=%%0d", 2+3); $finish; end endmodule\\n' > t.v`,
        "iverilog -o t t.v && vvp -n t",
        `python3 -c 'from sklearn.linear_model import LinearRegression; import numpy as np; x=np.arange(5).reshape(-1,1); print("slope=%.3f" % LinearRegression().fit(x, 2*x.ravel()+1).coef_[0])'`,
        `python3 -c 'import seaborn as sns; ax = sns.lineplot(x=[0,1,2], y=[1,0,1]); ax.figure.savefig("/tmp/s.png"); print("seaborn ok")'`,
      ].join(" && ");
      const out = execFileSync(
        "docker",
        ["run", "--rm", "--network=none", "--user=65534:65534", "scifi-sci:local", "sh", "-c", script],
        { encoding: "utf8", timeout: 120_000 },
      );
      expect(out).toContain("sum=5");
      expect(out).toContain("slope=2.000");
      expect(out).toContain("seaborn ok");
    },
    180_000,
  );
});
