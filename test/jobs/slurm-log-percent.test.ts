// A `%` in the folder of a job's log (a scifi home like /scratch/100%) is a replacement to sbatch
// (`%x`, `%u`): slurmFilePattern doubles it, so the log lands where the runner reads it, on a real
// SLURM; a backslash (which turns SLURM's replacements off) is refused, named.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { slurmFilePattern } from "../../runner/jobs/batch-script.ts";
import { hasEngine } from "../helpers/engines.ts";

const root = mkdtempSync(join(tmpdir(), "scifi-slurm-pct-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("slurmFilePattern", () => {
  it("doubles every % of the folder and keeps the file name's %j", () => {
    expect(slurmFilePattern("/scratch/100%x/out/job-%j.out")).toBe("/scratch/100%%x/out/job-%j.out");
    expect(slurmFilePattern("/home/u/out/job-%j.err")).toBe("/home/u/out/job-%j.err");
  });

  it("refuses a folder with a backslash, naming it", () => {
    expect(() => slurmFilePattern("/home/a\\b/job-%j.out")).toThrow(/a\\\\b.*backslash.*SCIFI_HOME/);
  });
});

describe.skipIf(!hasEngine("slurm"))("on a real SLURM cluster", () => {
  it("a job's log lands in a folder named with %x and %u, at the path the runner reads", {
    timeout: 60_000,
  }, async () => {
    const dir = join(root, "home 100%x%u");
    mkdirSync(dir);
    const id = execFileSync(
      "sbatch",
      ["--parsable", `--output=${slurmFilePattern(join(dir, "job-%j.out"))}`, "--wrap", "echo logged"],
      { encoding: "utf8" },
    ).trim();
    const log = join(dir, `job-${id}.out`);
    for (let i = 0; i < 100 && !existsSync(log); i++) await new Promise((r) => setTimeout(r, 300));
    expect(existsSync(log), `no log at ${log}`).toBe(true);
    for (let i = 0; i < 50 && !readFileSync(log, "utf8").includes("logged"); i++) {
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(readFileSync(log, "utf8")).toContain("logged");
  });
});
