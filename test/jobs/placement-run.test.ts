// `scifi submit` end to end: the example task is placed on the real SLURM cluster, `scifi run` runs
// it there in a Docker sandbox with a scripted model (labelled scripted), and the task passes; the
// status lookup shows the SLURM job and then the run's final state.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listSubmissions, type PlacementStatus, placementStatus } from "../../runner/jobs/placement.ts";
import { SlurmClient } from "../../runner/jobs/slurm.ts";
import { submitTask } from "../../runner/jobs/submit.ts";
import { loadSam } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";

const REPO = new URL("../..", import.meta.url).pathname;
const FIXTURES = join(REPO, "test", "fixtures", "slurm");
const PRELOAD = join(REPO, "test", "fixtures", "process-exit", "preload.mjs");
let root = "";

describe.skipIf(!hasEngine("slurm") || !hasEngine("docker"))(
  "scifi submit runs a task on a compute node",
  () => {
    beforeAll(() => {
      execFileSync("bash", [join(REPO, "scripts", "build-image.sh"), "--base-only"], { stdio: "inherit" });
      root = mkdtempSync(join(tmpdir(), "scifi-placed-"));
    }, 1_200_000);
    afterAll(() => {
      if (root) rmSync(root, { recursive: true, force: true });
    });

    it("the job runs scifi run, the task passes, status shows SLURM then the run outcome", async () => {
      const home = join(root, "home");
      const taskDir = join(root, "task");
      mkdirSync(home);
      cpSync(join(FIXTURES, "placed"), taskDir, { recursive: true });
      const result = await submitTask({
        home,
        sam: await loadSam(join(taskDir, "task.md"), home),
        flags: {},
        backend: "auto",
        dryRun: false,
        model: `scripted:${join(FIXTURES, "placed-pass.yaml")}`,
      });
      const record = listSubmissions(home)[0];
      if (!record) throw new Error("no submission record");
      expect(record.jobId).toBe(result.jobId);

      const slurm = new SlurmClient();
      const seen: PlacementStatus[] = [];
      const deadline = Date.now() + 240_000;
      let status = await placementStatus(home, record, slurm);
      while (Date.now() < deadline && !(status.run?.outcome && status.slurm?.state === "COMPLETED")) {
        seen.push(status);
        await new Promise((r) => setTimeout(r, 1000));
        status = await placementStatus(home, record, slurm);
      }
      const log = readFileSync(join(result.submitDir, `slurm-${result.jobId}.out`), "utf8");
      expect(status.summary, log).toBe("PASSED");
      expect(status.slurm).toMatchObject({ jobId: result.jobId, state: "COMPLETED", exitCode: "0:0" });
      expect(status.run?.outcome?.status).toBe("passed");
      expect(seen.some((s) => ["PENDING", "RUNNING"].includes(s.summary))).toBe(true);
      expect(log).toContain(`scifi submit: job ${result.jobId} on`);
      expect(log).toContain("PASSED: every check and review item passed");
      expect(readFileSync(join(taskDir, "sum.txt"), "utf8")).toBe("5050\n");
    }, 300_000);

    it("after a timed-out command the job's scifi run ends by itself, and the job with it (issue 32)", async () => {
      const home = join(root, "home-timeout");
      const taskDir = join(root, "task-timeout");
      mkdirSync(home);
      cpSync(join(FIXTURES, "placed"), taskDir, { recursive: true });
      // The job inherits this environment: the preload reports what is open when its loop runs empty.
      const handles = join(root, "timeout-handles.json");
      process.env.SCIFI_TEST_HANDLES = handles;
      let result: Awaited<ReturnType<typeof submitTask>>;
      try {
        result = await submitTask({
          home,
          sam: await loadSam(join(taskDir, "task.md"), home),
          flags: {},
          backend: "auto",
          dryRun: false,
          model: `scripted:${join(FIXTURES, "placed-timeout.yaml")}`,
          scifiCommand: [process.execPath, "--import", PRELOAD, join(REPO, "bin", "scifi.js")],
        });
      } finally {
        delete process.env.SCIFI_TEST_HANDLES;
      }
      const record = listSubmissions(home)[0];
      if (!record) throw new Error("no submission record");
      const slurm = new SlurmClient();
      const deadline = Date.now() + 240_000;
      let outcomeAt: number | undefined;
      let status = await placementStatus(home, record, slurm);
      while (Date.now() < deadline && status.slurm?.state !== "COMPLETED") {
        if (status.run?.outcome && outcomeAt === undefined) outcomeAt = Date.now();
        await new Promise((r) => setTimeout(r, 500));
        status = await placementStatus(home, record, slurm);
      }
      const log = readFileSync(join(result.submitDir, `slurm-${result.jobId}.out`), "utf8");
      expect(status.slurm, log).toMatchObject({ jobId: result.jobId, state: "COMPLETED", exitCode: "0:0" });
      expect(status.run?.outcome?.status, log).toBe("passed");
      // The job ends within seconds of the run's outcome (it held its allocation to the time limit);
      // an outcome first seen with the job already completed ended within one poll.
      const endedAt = Date.now();
      expect(endedAt - (outcomeAt ?? endedAt), log).toBeLessThan(10_000);
      expect(JSON.parse(readFileSync(handles, "utf8")), log).toEqual([]);
      expect(log).toContain("PASSED: every check and review item passed");
    }, 300_000);
  },
);
