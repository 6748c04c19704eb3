// a38d-submit-home-space (fixed): `scifi submit`, and the new `ctl resume` of a submit-placed run,
// fail for a scifi home whose path holds a space, with sbatch's own words.
//
// The promise (docs/ctl.md: `resume` of a run `scifi submit` placed "submits it again"; docs/slurm.md
// places the task as one job; style: errors say what failed and what to do). A home under
// "/home/ana/My Runs" or a Mac-style "Application Support" folder is ordinary.
// What happened (real SLURM): the batch script (runner/jobs/placement.ts renderPlacementScript)
// writes `#SBATCH --chdir=<home>/submits/...` and `#SBATCH --output=...` unquoted; sbatch splits the
// directive at the space and refuses the script: "scifi submit: sbatch failed: sbatch: error:
// Invalid directive found in batch script: home/submits/...", exit 1, with a submit folder left
// behind. runner/jobs/submit.ts resubmitRun renders the same lines, so `ctl <run> resume` of such a
// run fails the same way (the run stays paused, no job). sbatch accepts the value in double
// quotes (`#SBATCH --chdir="/tmp/a b"` runs, checked with `sbatch --test-only`).
// Fixed: every #SBATCH value built from a path is double-quoted (placement.ts directiveValue); a
// quote, backslash or control character in it is refused before anything is written (exit 2).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderPlacementScript } from "../../runner/jobs/placement.ts";

function slurm(): boolean {
  try {
    execFileSync("sinfo", ["-h"], { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!slurm())("a38d: a scifi home with a space in its path (real sbatch --test-only)", () => {
  it.each([
    ["submit", undefined],
    ["ctl resume (resubmitRun)", ["run", "--resume", "20261204-000000-t-abcdef"]],
  ])("the %s batch script is one sbatch accepts", (_what, command) => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38d-space-"));
    const home = join(root, "my home");
    const submitDir = join(home, "submits", "20261204-000000-t-abcdef");
    mkdirSync(submitDir, { recursive: true });
    const script = renderPlacementScript({
      sbatchArgs: ["--time=00:05:00", "--mem=1G", "--cpus-per-task=1"],
      samFile: join(root, "task", "task.md"),
      home,
      submitDir,
      scifiCommand: [process.execPath, "/opt/scifi/bin/scifi.js"],
      backend: "docker",
      ...(command ? { command } : {}),
    });
    const file = join(root, "job.sbatch");
    writeFileSync(file, script);
    let answer = "";
    try {
      answer = execFileSync("sbatch", ["--test-only", file], { encoding: "utf8", stdio: "pipe" });
    } catch (error) {
      answer = `refused: ${String((error as { stderr?: string }).stderr ?? error)}`;
    }
    expect(answer).not.toMatch(/refused|Invalid directive/);
  });
});
