// Issue 24 with SLURM jobs (Docker and the test cluster; the Apptainer harness has no cluster): the
// agent's jobs outlive nothing of the verdict. The Python task of the adversarial suite (pyref) with
// `jobs: slurm`; a job that swaps the deliverable after the checks, and a job that waits for the
// hidden reference to come back at the end of the run. The jobs are cancelled, and waited for, before
// the first check and before the hidden assets go back (runner/run/phases/checks.ts, start.ts).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { removeCopy } from "../../runner/run/checks/check-copy.ts";
import { hasEngine } from "../helpers/engines.ts";
import {
  type AdversarialRun,
  adversarialWorkspace,
  checkEvents,
  hiddenKeptAt,
  runIn,
} from "./adversarial/workspace.ts";

function slurmWorkspace() {
  const ws = adversarialWorkspace("pyref");
  const text = readFileSync(ws.sam, "utf8").replace(/^iterations: 1$/m, "iterations: 1\njobs: slurm");
  writeFileSync(ws.sam, text);
  return ws;
}

/** The broker's job events on the history, with their index among all events. */
function jobEvents(run: AdversarialRun) {
  return run.history.flatMap((e, at) => (e.type === "job" ? [{ at, event: e }] : []));
}

function submittedJob(run: AdversarialRun): string {
  const submit = jobEvents(run).find((j) => j.event.action === "submit");
  expect(submit, `no submit event: ${JSON.stringify(jobEvents(run))}`).toBeDefined();
  expect(submit?.event.decision).toBe("allowed");
  return submit?.event.jobId ?? "";
}

/** The agent waited until its job wrote `started` in the task folder (the job really ran). */
function ranBeforeTheChecks(run: AdversarialRun): boolean {
  return run.tools.some((t) => t.name === "bash" && t.output.includes("running"));
}

function jobGone(id: string): void {
  if (!/^\d+$/.test(id)) return; // refused or never queued: nothing to be alive
  expect(execFileSync("squeue", ["-h", "-j", id, "-o", "%i"], { encoding: "utf8" }).trim()).toBe("");
}

/** Regular files under `dir` (relative paths) whose content holds `marker`; no link followed. */
function filesHolding(dir: string, marker: string, rel = ""): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((entry) => {
    const child = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return filesHolding(dir, marker, child);
    if (!entry.isFile()) return [];
    return readFileSync(join(dir, child), "utf8").includes(marker) ? [child] : [];
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!hasEngine("slurm") || !hasEngine("docker"))(
  "the agent's jobs end before the verdict (docker, SLURM)",
  { timeout: 300_000 },
  () => {
    it("a job that would swap the deliverable after the checks is cancelled before them: what was judged is delivered", async () => {
      const ws = slurmWorkspace();
      const run = await runIn(ws, "pyref-job-swaps.yaml", "docker");
      const id = submittedJob(run);
      expect(ranBeforeTheChecks(run), "the job was running before the agent finished").toBe(true);
      const firstCheck = run.history.findIndex((e) => e.type === "check");
      expect(firstCheck, "the checks ran").toBeGreaterThan(-1);
      const cancel = jobEvents(run).find((j) => j.event.action === "cancel_all");
      expect(cancel, "the jobs were cancelled").toBeDefined();
      expect(cancel?.at, "the jobs were cancelled before the first check").toBeLessThan(firstCheck);
      // Whatever the job managed, the verdict covers the folder as delivered.
      const { outcome } = run.result;
      if (outcome.status === "passed") {
        expect(checkEvents(run).every((e) => e.passed)).toBe(true);
        expect(readFileSync(join(ws.taskDir, "solution.py"), "utf8")).toContain("3 * n + 1");
      } else {
        expect(outcome.reason).toMatch(/root\/check|changed after the checks/);
      }
      // Past the time the job would have swapped: it is gone, and so is any chance to.
      await sleep(15_000);
      jobGone(id);
      if (outcome.status === "passed")
        expect(readFileSync(join(ws.taskDir, "solution.py"), "utf8")).toContain("3 * n + 1");
      hiddenKeptAt(run, {
        fixture: "pyref",
        file: "checks/reference.json",
        marker: "HIDDEN-PYREF-5b7e2c91d0",
      });
      removeCopy(ws.root);
    });

    it("a job waiting for the hidden reference to come back at the end of the run never sees it", async () => {
      const ws = slurmWorkspace();
      const run = await runIn(ws, "pyref-job-steals.yaml", "docker");
      const id = submittedJob(run);
      expect(ranBeforeTheChecks(run), "the job was running before the agent finished").toBe(true);
      expect(run.result.outcome.status, run.result.outcome.reason).toBe("failed");
      const cancels = jobEvents(run).filter((j) => j.event.action === "cancel_all");
      expect(cancels.length, "the jobs were cancelled").toBeGreaterThan(0);
      // The reference is back in the task folder; give a job that survived time to copy it.
      hiddenKeptAt(run, {
        fixture: "pyref",
        file: "checks/reference.json",
        marker: "HIDDEN-PYREF-5b7e2c91d0",
      });
      await sleep(3_000);
      jobGone(id);
      expect(existsSync(join(ws.taskDir, "stolen.json")), "the job copied the hidden reference").toBe(false);
      // Nor through its output file (slurm-out/ is in the task folder): no file but the reference holds it.
      const holders = filesHolding(ws.taskDir, "HIDDEN-PYREF-5b7e2c91d0").filter(
        (f) => f !== "checks/reference.json",
      );
      expect(holders, "files of the task folder holding the hidden reference").toEqual([]);
      removeCopy(ws.root);
    });
  },
);
