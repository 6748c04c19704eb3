// `scifi eval --slurm` on the test cluster: each trial is a SLURM job placed through `scifi submit`'s
// path, running `scifi eval trial` (the same trial code as a local eval) in a Docker sandbox on the
// node with scripted models (labelled scripted); the eval ends with the same summary as a local one.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runEval } from "../../runner/eval/engine.ts";
import { evalFiles } from "../../runner/eval/plan.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { comparable } from "./eval-workspace.ts";

const FIXTURES = join(import.meta.dirname, "fixtures");

describe.skipIf(!hasEngine("slurm") || !hasEngine("docker"))("scifi eval --slurm (test cluster)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("one SLURM job per trial, and the same summary as a local eval", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-eval-slurm-"));
    cpSync(FIXTURES, root, { recursive: true });
    const models = ["pass", "never"].map((m) => `scripted:${join(root, "models", `${m}.yaml`)}`);
    const suite = join(root, "suite");
    const common = {
      suite,
      models,
      repeats: 1,
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    };
    const local = await runEval({ ...common, home: join(root, "local") });
    const home = join(root, "cluster");
    mkdirSync(home);
    const lines: string[] = [];
    const placed = await runEval({
      ...common,
      home,
      slurm: true,
      backend: "docker",
      pollMs: 500,
      log: (l) => lines.push(l),
    });
    expect(placed.summary.trials, lines.join("\n")).toEqual({
      planned: 4,
      pass: 2,
      fail: 2,
      error: 0,
      pending: 0,
    });
    expect(comparable(placed.summary)).toEqual(comparable(local.summary));
    for (const t of JSON.parse(readFileSync(evalFiles(placed.evalDir).plan, "utf8")).trials as {
      trialId: string;
    }[]) {
      const job = JSON.parse(readFileSync(evalFiles(placed.evalDir).job(t.trialId), "utf8")) as {
        jobId: string;
        submitDir: string;
      };
      expect(job.jobId).toMatch(/^\d+$/);
      const log = readFileSync(join(job.submitDir, `slurm-${job.jobId}.out`), "utf8");
      expect(log).toContain(`scifi submit: job ${job.jobId} on`);
      expect(log).toMatch(new RegExp(`(PASS|FAIL) ${t.trialId.replace(/\./g, "\\.")}:`));
      expect(existsSync(join(job.submitDir, "job.sbatch"))).toBe(true);
    }
  }, 900_000);
});
