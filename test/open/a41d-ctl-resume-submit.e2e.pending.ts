// Attacker a41d (issue 41, `scifi ctl` of a `scifi submit` run): a person pauses a night's run that
// `scifi submit` placed on SLURM, then resumes it from the login node. Real SLURM, real Docker, a
// scripted model (labelled scripted).
//
// Doc promise: docs/ctl.md: `resume` continues "a direct run (`scifi run`) ... in the foreground
// of the shell that typed resume" and "a daemon task ... queued again"; a run `scifi submit`
// placed is neither, and docs/slurm.md says the job holds the run (its --time, --mem, --gres; ctl
// even raises the job's TimeLimit with the wall time).
// What happened (measured): `ctl <run> pause --wait` pauses it (the job ends, exit 5), and `ctl
// <run> resume` runs the rest of the night in the foreground of the login node's shell: no SLURM
// job (squeue empty), none of the job's resources or limits, the login node's engine; a GPU task
// would run (or fail) on the login node, and closing that shell ends the run.
// The daemon's SLURM placement does the same by design (runner/daemon/placement.ts: "`resume`
// queues it again (it continues on this host)"), though docs/daemon.md says "Placed runs are not
// resumed by the daemon": a paused placed task resumes as a local worker on the daemon's host.
// Suggested fix: ctl resume of a run placed by `scifi submit` (its submits/<id>/submit.json names
// the run) submits it again with the same sbatch options and `run --resume <run>` as the job's
// command, printing the new job id; or refuses (exit 2) naming how to resubmit. Docs: say which.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, cli } from "../attack/a41-run.ts";
import { script, workspace } from "../attack/a41d-run.ts";
import { hasEngine } from "../helpers/engines.ts";
import { waitFor } from "../run/harness.ts";

function slurm(): boolean {
  try {
    execFileSync("sinfo", ["-h"], { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!hasEngine("docker") || !slurm())(
  "a41d: ctl resume of a paused `scifi submit` run (slurm)",
  { timeout: 180_000 },
  () => {
    it("goes back to SLURM, or is refused; it never runs on the login node", async () => {
      const ws = workspace();
      chmodSync(ws.root, 0o755); // slurmd reads the submit folder as the job's user
      const out = execFileSync(
        process.execPath,
        [CLI, "submit", ws.taskDir, "--model", `scripted:${script({ workSec: 8 })}`, "--backend", "docker"],
        { env: { ...process.env, SCIFI_HOME: ws.home }, encoding: "utf8" },
      );
      const job = /submitted job (\d+)/.exec(out)?.[1] ?? "";
      expect(job, out).not.toBe("");
      const runs = join(ws.home, "runs");
      const runId = await waitFor(
        () => {
          const first = existsSync(runs) ? readdirSync(runs)[0] : undefined;
          return first && existsSync(join(runs, first, "state.json")) ? first : undefined;
        },
        90_000,
        200,
      );
      const paused = await cli(ws.home, ["ctl", runId, "pause", "--wait"]);
      expect(paused.stdout, paused.stderr).toMatch(/paused after phase/);
      await waitFor(
        () =>
          execFileSync("squeue", ["-h", "-j", job], { encoding: "utf8" }).trim() === "" ? true : undefined,
        30_000,
        500,
      );
      const resumed = await cli(ws.home, ["ctl", runId, "resume"]);
      const jobs = execFileSync("squeue", ["-h", "-o", "%i %j"], { encoding: "utf8" });
      for (const line of jobs.split("\n"))
        if (line.includes("scifi-")) execFileSync("scancel", [line.split(" ")[0] ?? ""]);
      const toSlurm = /scifi-gfortran/.test(jobs);
      expect(
        resumed.code === 2 || toSlurm,
        `ctl resume ran the run here (exit ${resumed.code}, no job in squeue):\n${resumed.stdout}${resumed.stderr}`,
      ).toBe(true);
      expect(resumed.stderr).not.toMatch(/phase checks/);
    });
  },
);
