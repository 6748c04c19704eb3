// Attacker a41d (issue 41, `scifi ctl` of a `scifi submit` run; fixed): a person pauses a night's run that
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
// Fixed: `ctl resume` of a run `scifi submit` placed submits it again (runner/jobs/submit.ts
// resubmitRun: the first job's #SBATCH options, backend and model, `scifi run --resume <run>` as the
// job's command, recorded as a submission of its own) and prints the new job id; docs/ctl.md.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, readdirSync, readFileSync } from "node:fs";
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
    it("goes back to SLURM with the first job's options and ends there; it never runs on the login node", async () => {
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
      expect(resumed.code, resumed.stderr).toBe(0);
      const again = /resumed as SLURM job (\d+)/.exec(resumed.stdout)?.[1] ?? "";
      expect(again, resumed.stdout).not.toBe("");
      expect(again).not.toBe(job);
      // Nothing ran in ctl's own process: the resumed job drives the run to its outcome on a node.
      expect(resumed.stderr).not.toMatch(/phase checks/);
      const state = await waitFor(
        () => {
          const s = JSON.parse(readFileSync(join(runs, runId, "state.json"), "utf8")) as {
            outcome?: { status: string };
          };
          return s.outcome ? s : undefined;
        },
        120_000,
        500,
      );
      // The scripted agent fixes nothing: its checks fail there, judged (not an error).
      expect(state.outcome?.status).toBe("failed");
      const history = readFileSync(join(runs, runId, "history.jsonl"), "utf8");
      const resumedAt = history.indexOf('"resumed"');
      expect(resumedAt).toBeGreaterThan(0);
      expect(history.indexOf('"type":"check"', resumedAt)).toBeGreaterThan(resumedAt);
      const log = readdirSync(join(ws.home, "submits"))
        .map((d) => join(ws.home, "submits", d, `slurm-${again}.out`))
        .find((f) => existsSync(f));
      expect(log, "the resumed job wrote no SLURM log").toBeDefined();
    });
  },
);
