// Attacker session for issue 25, a probe that HELD (A25-8): a SLURM job tries to destroy a start file
// after the last comparison, through a shared mapping it made while the folder was lent (SLURM, Docker, scripted
// agent: test/fixtures/attack25/mmap-job.yaml).
//
// Docs promise (docs/approval.md, SLURM jobs of the run): "Before the checks the run ends every job
// of the agent's ... and then compares again (RunGates.afterAgentJobs): what a job destroyed after
// the agent's last call is put back host-side and asked ... No job of the agent's runs after that
// point, so nothing is left uncompared"; and (docs/slurm.md) "a job kept running past that phase can
// read but no longer write it".
//
// What happened: the job's container is `docker kill`ed at the cancel (a SIGTERM it ignores buys
// nothing), so the window between the comparison after the pass and the end of the job is tens of
// ms; the job's write through its mapping 5 ms and 20 ms after the folder was taken back was found
// by the comparison after the jobs ended, put back and asked (denied here). Timing-dependent by
// nature: the assertion is that the file is never destroyed without a request.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pendingApprovals, runApprovals } from "../../runner/approval/store.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");
const FIXTURES = join(REPO, "test", "fixtures", "attack25");
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!hasEngine("docker") || !hasEngine("slurm"))(
  "A25-8: a job's mapping outlives the comparison",
  () => {
    it("the start file is intact or put back and asked when the run ends", async () => {
      const root = mkdtempSync(join(tmpdir(), "scifi-a25-mmap-job-"));
      roots.push(root);
      const home = join(root, "home");
      const taskDir = join(root, "task");
      mkdirSync(home);
      mkdirSync(join(taskDir, "data"), { recursive: true });
      writeFileSync(join(taskDir, "task.md"), readFileSync(join(FIXTURES, "mmap-job.md"), "utf8"));
      const start = `energy\n${"1.0\n".repeat(4000)}`;
      writeFileSync(join(taskDir, "data", "raw.csv"), start);
      let out = "";
      const child = spawn(
        process.execPath,
        [CLI, "run", join(taskDir, "task.md"), "--model", `scripted:${join(FIXTURES, "mmap-job.yaml")}`],
        {
          cwd: root,
          env: { ...process.env, SCIFI_HOME: home, SCIFI_APPROVAL_POLL_MS: "200" },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
      while (child.exitCode === null) {
        for (const v of pendingApprovals(home))
          execFileSync(process.execPath, [CLI, "deny", v.runId, v.request.id, "--reason", "keep it"], {
            env: { ...process.env, SCIFI_HOME: home },
          });
        await new Promise((r) => setTimeout(r, 250));
      }
      const code = await exited;
      const runs = readdirSync(join(home, "runs")).filter((d) => !d.endsWith(".html"));
      const requests = runs.flatMap((id) => runApprovals(home, id).map((v) => v.request.summary));
      const jobOut = readdirSync(join(taskDir, "slurm-out"))
        .map((f) => readFileSync(join(taskDir, "slurm-out", f), "utf8"))
        .join("");
      const now = readFileSync(join(taskDir, "data", "raw.csv"), "utf8");
      // Either the job never destroyed it, or it was put back (and asked); never destroyed unasked.
      expect({ code, requests, head: now.slice(0, 12), jobOut }, out).toEqual({
        code: 0,
        requests: jobOut.includes("overwrote") ? [expect.stringMatching(/^rewrite data\/raw\.csv, /)] : [],
        head: start.slice(0, 12),
        jobOut,
      });
    }, 400_000);
  },
);
