// A whole `scifi run` with SLURM jobs: real Docker sandbox, real SLURM cluster, scripted model over
// HTTP (labelled scripted). The agent submits a job that computes a number, waits, reads the output,
// and the runner's own check of that number passes; a job left running is cancelled at the end.
import { execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalRequest } from "../../runner/approval/store.ts";
import type { RunExtension } from "../../runner/extension/run-extension.ts";
import type { JobEvent } from "../../runner/jobs/broker.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";

const REPO = new URL("../..", import.meta.url).pathname;
const FIXTURES = join(REPO, "test", "fixtures", "slurm");
const roots: string[] = [];

function workspace(fixture = "agent"): { home: string; taskDir: string; sam: string } {
  const root = mkdtempSync(join(tmpdir(), "scifi-slurm-agent-"));
  roots.push(root);
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  cpSync(join(FIXTURES, fixture), taskDir, { recursive: true });
  return { home, taskDir, sam: join(taskDir, "task.md") };
}

function run(ws: ReturnType<typeof workspace>, script: string) {
  return runTask({
    home: ws.home,
    task: ws.sam,
    backend: "docker",
    model: `scripted:${join(FIXTURES, script)}`,
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
  });
}

function events(runDir: string): JobEvent[] {
  return readFileSync(join(runDir, "jobs", "events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as JobEvent);
}

describe.skipIf(!hasEngine("slurm") || !hasEngine("docker"))(
  "scifi run with SLURM jobs (scripted agent)",
  () => {
    beforeAll(() => {
      execFileSync("bash", [join(REPO, "scripts", "build-image.sh"), "--base-only"], { stdio: "inherit" });
    }, 1_200_000);
    afterAll(() => {
      for (const root of roots) rmSync(root, { recursive: true, force: true });
    });

    it("submits a job computing a number, waits, reads it, and passes on the check of that number", async () => {
      const ws = workspace();
      const result = await run(ws, "agent-pass.yaml");
      expect(result.outcome).toEqual({ status: "passed", reason: "every check and review item passed" });
      expect(readFileSync(join(ws.taskDir, "answer.txt"), "utf8")).toBe("5050\n");
      const history = readHistory(join(result.dir, "history.jsonl"));
      expect(history.filter((e) => e.type === "check").map((e) => e.type === "check" && e.passed)).toEqual([
        true,
      ]);
      // Every broker call is on the run's job record, with the decision; the wait is one call.
      const recorded = events(result.dir);
      expect(recorded.map((e) => `${e.action}:${e.decision}`)).toEqual([
        "submit:allowed",
        "status:allowed",
        "output:allowed",
        "cancel_all:allowed",
      ]);
      expect(recorded[1]).toMatchObject({
        request: { jobId: "sum", waitMs: 90_000 },
        result: { state: "COMPLETED" },
      });
      // Before the checks every job of the agent is ended (this one had completed), once: none since.
      expect(recorded[3]).toMatchObject({ request: { reason: "the checks begin" } });
      expect(recorded[3]?.result).toEqual({ cancelled: [], kept: false, stillLive: [] });
      // A job that completed on its own was not stopped: no integrity event (docs/integrity.md).
      expect(history.filter((e) => e.type === "integrity")).toEqual([]);
      // ... and each is one line on the history tape too, in the same order.
      expect(
        history.filter((e) => e.type === "job").map((e) => e.type === "job" && `${e.action}:${e.decision}`),
      ).toEqual(["submit:allowed", "status:allowed", "output:allowed", "cancel_all:allowed"]);
      expect(history.find((e) => e.type === "job" && e.action === "status")).toMatchObject({ jobId: "sum" });
      const jobs = JSON.parse(readFileSync(join(result.dir, "jobs", "jobs.json"), "utf8")) as {
        jobs: { jobId: string; name: string; script: string }[];
      };
      expect(jobs.jobs).toMatchObject([{ name: "sum", script: "jobs/sum.sh" }]);
      // The records (frozen script copy) are in the run folder, not the task folder.
      expect(existsSync(join(result.dir, "jobs", "scripts"))).toBe(true);
    }, 300_000);

    it("cancelling the task (SIGTERM to scifi) cancels its running job and stops its container", async () => {
      const ws = workspace();
      const child = spawn(
        process.execPath,
        [join(FIXTURES, "run-with-jobs.ts"), ws.home, ws.sam, join(FIXTURES, "agent-interrupted.yaml")],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let output = "";
      child.stdout.on("data", (d) => (output += d));
      child.stderr.on("data", (d) => (output += d));
      const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
      // Wait until the job runs (its container is up), then cancel the task.
      let jobId = "";
      for (let i = 0; i < 240 && !jobId; i++) {
        await new Promise((r) => setTimeout(r, 500));
        const runDir = /^run \S+ (\S+)$/m.exec(output)?.[1];
        const records = runDir ? join(runDir, "jobs", "jobs.json") : "";
        if (records && existsSync(records)) {
          const id = (JSON.parse(readFileSync(records, "utf8")) as { jobs: { jobId: string }[] }).jobs[0]
            ?.jobId;
          const running =
            id && execFileSync("docker", ["ps", "-q", "--filter", `name=^scifi-job-${id}$`]).length > 0;
          if (running) jobId = id;
        }
      }
      expect(jobId, output).toMatch(/^\d+$/);
      child.kill("SIGTERM");
      // The jobs are cancelled by the interrupt cleanup; how the process then exits is the
      // sandbox registry's business (it leaves the exit to another signal owner when there is one).
      const runDir = /^run \S+ (\S+)$/m.exec(output)?.[1] ?? "";
      for (let i = 0; i < 60 && events(runDir).at(-1)?.action !== "cancel_all"; i++) {
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(events(runDir).at(-1), output).toMatchObject({
        action: "cancel_all",
        request: { reason: "scifi was interrupted" },
        result: { cancelled: [jobId] },
      });
      if (child.exitCode === null) child.kill("SIGKILL");
      await exited;
      expect(execFileSync("squeue", ["-h", "-j", jobId, "-o", "%i"], { encoding: "utf8" }).trim()).toBe("");
      for (let i = 0; i < 30; i++) {
        if (execFileSync("docker", ["ps", "-q", "--filter", `name=^scifi-job-${jobId}$`]).length === 0) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(
        execFileSync("docker", ["ps", "-q", "--filter", `name=^scifi-job-${jobId}$`], { encoding: "utf8" }),
      ).toBe("");
    }, 300_000);

    it("a job that would swap the deliverable after the checks is ended before them: the folder judged is the folder delivered", async () => {
      const ws = workspace("hidden");
      const result = await run(ws, "agent-swap-after-checks.yaml");
      const history = readHistory(join(result.dir, "history.jsonl"));
      const firstCheck = history.findIndex((e) => e.type === "check");
      const ended = history.findIndex((e) => e.type === "job" && e.action === "cancel_all");
      expect(ended, "the job was ended before the first check").toBeGreaterThanOrEqual(0);
      expect(ended).toBeLessThan(firstCheck);
      expect(result.outcome.status, result.outcome.reason).toBe("passed");
      // The job still running when the work ended, cancelled: one integrity event (docs/integrity.md).
      expect(history.filter((e) => e.type === "integrity")).toMatchObject([
        { kind: "job_after_work", role: "work", action: "cancelled (the checks begin)" },
      ]);
      // The swap never happened: the job was gone before it woke up.
      await new Promise((r) => setTimeout(r, 2000));
      expect(readFileSync(join(ws.taskDir, "answer.txt"), "utf8")).toBe("5050\n");
      const submitted = events(result.dir).find((e) => e.action === "submit")?.result?.jobId as string;
      expect(execFileSync("squeue", ["-h", "-j", submitted, "-o", "%i"], { encoding: "utf8" }).trim()).toBe(
        "",
      );
    }, 300_000);

    it("a job waiting for the hidden reference to come back at the run's end is ended before it does", async () => {
      const ws = workspace("hidden");
      const result = await run(ws, "agent-steal-at-end.yaml");
      expect(result.outcome.status).toBe("failed");
      // The hidden reference is back in the task folder, and nothing of the agent's was there to see it.
      expect(readFileSync(join(ws.taskDir, "checks", "reference.txt"), "utf8")).toBe("5050\n");
      await new Promise((r) => setTimeout(r, 3000));
      expect(existsSync(join(ws.taskDir, "stolen.txt"))).toBe(false);
      const submitted = events(result.dir).find((e) => e.action === "submit")?.result?.jobId as string;
      expect(execFileSync("squeue", ["-h", "-j", submitted, "-o", "%i"], { encoding: "utf8" }).trim()).toBe(
        "",
      );
    }, 300_000);

    it("approval: [delete]: a job rewriting a start file after the agent's last call, before it is cancelled, is put back and asked (issue 25)", async () => {
      const ws = workspace("late-rewrite");
      // Writable by the job also for a root-run scifi, whose jobs run as the sandbox user once the
      // folder was given back after the work pass (a start file others may write, as users leave them).
      chmodSync(join(ws.taskDir, "data.csv"), 0o666);
      const rewritten = () => readFileSync(join(ws.taskDir, "data.csv"), "utf8") !== "1,2,3\n";
      const asked: ApprovalRequest[] = [];
      let fired = false;
      let sawRewrite = false;
      // The test holds the run between the work pass and the jobs' cancel (this hook runs before the
      // SLURM extension's, in the same endAgentWork): it lets the job go and waits until it rewrote.
      const hold: RunExtension = {
        async endAgentWork(reason) {
          if (reason !== "the checks begin" || fired) return [];
          fired = true;
          writeFileSync(join(ws.taskDir, "go"), "");
          for (let i = 0; i < 600 && !rewritten(); i++) await new Promise((r) => setTimeout(r, 200));
          sawRewrite = rewritten();
          return [];
        },
      };
      const result = await runTask({
        home: ws.home,
        task: ws.sam,
        backend: "docker",
        model: `scripted:${join(FIXTURES, "agent-late-rewrite.yaml")}`,
        retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
        extensions: [hold],
        approvalPrompt: async (request) => {
          asked.push(request);
          return { approved: false, note: "keep the data" };
        },
      });
      expect(sawRewrite, "the job rewrote the file in the window").toBe(true);
      expect(asked.map((r) => `${r.action}: ${r.summary}`)).toEqual([
        "delete: rewrite data.csv, by the agent's work that outlived its sandbox (a SLURM job of the run)",
      ]);
      expect(readFileSync(join(ws.taskDir, "data.csv"), "utf8")).toBe("1,2,3\n");
      // The order that proves the window: the job was still live when the checks began (cancelled
      // then), the comparison came after that cancel, and before the first check.
      const submitted = events(result.dir).find((e) => e.action === "submit")?.result?.jobId as string;
      const history = readHistory(join(result.dir, "history.jsonl"));
      const cancel = history.findIndex((e) => e.type === "job" && e.action === "cancel_all");
      const request = history.findIndex((e) => e.type === "approval" && e.state === "requested");
      const check = history.findIndex((e) => e.type === "check");
      expect(events(result.dir).find((e) => e.action === "cancel_all")?.result).toMatchObject({
        cancelled: [submitted],
      });
      expect(cancel).toBeGreaterThanOrEqual(0);
      expect(request).toBeGreaterThan(cancel);
      expect(check).toBeGreaterThan(request);
      expect(result.outcome.status, result.outcome.reason).toBe("passed");
    }, 300_000);

    it("cancels the job the agent left running when the run ends", async () => {
      const ws = workspace();
      const result = await run(ws, "agent-leaves-job.yaml");
      expect(result.outcome.status).toBe("failed");
      const all = events(result.dir);
      const submitted = all.find((e) => e.action === "submit")?.result?.jobId as string;
      expect(submitted).toMatch(/^\d+$/);
      expect(all.at(-1)).toMatchObject({
        action: "cancel_all",
        decision: "allowed",
        result: { cancelled: [submitted], kept: false },
      });
      const live = execFileSync("squeue", ["-h", "-j", submitted, "-o", "%i"], { encoding: "utf8" });
      expect(live.trim()).toBe("");
    }, 300_000);
  },
);
