// The agent's job tools, as the model calls them, against the real SLURM cluster; and the slurm
// skill's own batch script, written by its shell block and run as a job exactly as the skill says.
import { execFileSync } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { JobBroker } from "../../runner/jobs/broker.ts";
import { DEFAULT_JOBS_POLICY } from "../../runner/jobs/policy.ts";
import { jobTools } from "../../runner/jobs/tools.ts";
import { shellBlocks } from "../../runner/skills/blocks.ts";
import { BUILTIN_SKILLS_DIR, loadSkills } from "../../runner/skills/index.ts";
import type { Tool, ToolContext } from "../../runner/tools/tool.ts";
import { hasEngine } from "../helpers/engines.ts";
import { samMetadata, taskFolders } from "./fixtures.ts";

// The job tools run host-side and never touch the sandbox; the context carries none.
const ctx = {
  sandbox: undefined as never,
  bashTimeoutMs: 10_000,
  maxOutputChars: 20_000,
} satisfies ToolContext;
const roots: string[] = [];
const BASE_IMAGE = "scifi-base:bookworm";

async function toolsFor(sam = samMetadata({})) {
  const folders = await taskFolders("tools");
  roots.push(folders.root);
  const broker = new JobBroker({
    runId: "tools-test",
    taskDir: folders.taskDir,
    recordsDir: folders.recordsDir,
    sam,
    policy: DEFAULT_JOBS_POLICY,
    // As a task's jobs run by default: in the task's container (Docker on this node).
    sandbox: { engine: "auto", image: BASE_IMAGE, sif: "/nonexistent.sif", network: false },
  });
  const tools = new Map(jobTools(broker).map((t): [string, Tool] => [t.name, t]));
  const call = async (name: string, input: Record<string, unknown>) => {
    const tool = tools.get(name);
    if (!tool) throw new Error(`tool ${name} not offered`);
    return tool.run(input, ctx);
  };
  return { broker, tools, call, ...folders };
}

afterAll(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

describe("job tools as the model sees them", () => {
  it("are not offered without jobs: slurm", async () => {
    const { tools } = await toolsFor(samMetadata({ jobs: undefined }));
    expect([...tools.keys()]).toEqual([]);
  });

  it("have stable names, descriptions and JSON Schemas", async () => {
    const { tools } = await toolsFor();
    expect([...tools.values()].map((t) => t.spec)).toMatchSnapshot();
  });

  it("answer bad input with a readable error", async () => {
    const { call } = await toolsFor();
    expect(await call("job_status", { job: "12; rm -rf /" })).toEqual({
      ok: false,
      output:
        "Invalid input for tool 'job_status': job: must be a job id (e.g. 1234) or the job name given to submit_job",
    });
  });
});

describe.skipIf(!hasEngine("slurm"))("job tools on a real SLURM cluster", () => {
  it("run the slurm skill's example job: submit, wait, read output and result file", async () => {
    const { call, taskDir } = await toolsFor();
    const skill = loadSkills([BUILTIN_SKILLS_DIR]).skills.find((s) => s.name === "slurm");
    if (!skill) throw new Error("skill slurm does not load");
    expect(skill.requires).toEqual(["jobs"]);
    for (const block of shellBlocks(skill)) execFileSync("bash", ["-euc", block.script], { cwd: taskDir });
    // A root runner's job container runs as the sandbox user (65534), to whom the work phase's sandbox
    // has lent the task folder (runner/sandbox/guard.ts): do the same here.
    if (process.getuid?.() === 0) execFileSync("chown", ["-R", "65534:65534", taskDir]);

    const submitted = await call("submit_job", {
      script: "jobs/sum.sh",
      args: ["100"],
      time: "5:00",
      memory: "200M",
    });
    expect(submitted.ok, submitted.output).toBe(true);
    const jobId = /Submitted job (\d+)/.exec(submitted.output)?.[1] ?? "";
    expect(submitted.output).toContain(`Its stdout goes to slurm-out/sum-${jobId}.out`);

    const status = await call("job_status", { job: jobId, wait_seconds: 200 });
    expect(status.output).toMatch(new RegExp(`^Job ${jobId}: COMPLETED, exit code 0:0 \\(exit:signal\\)`));
    // By name as well: the latest job the task submitted under that name.
    expect((await call("job_status", { job: "sum" })).output).toMatch(new RegExp(`^Job ${jobId}: COMPLETED`));
    const out = await call("job_output", { job: jobId });
    expect(out.output).toBe(`Job ${jobId} stdout:\nn=100 sum=5050\n`);
    expect(await readFile(join(taskDir, "results", "sum-100.txt"), "utf8")).toBe("5050\n");
    expect(await call("job_cancel", { job: jobId })).toEqual({
      ok: true,
      output: `Job ${jobId} had already ended (COMPLETED); nothing to cancel.`,
    });
  }, 240_000);

  it("turn a refusal into the broker's message", async () => {
    const { call } = await toolsFor();
    expect(await call("submit_job", { script: "x.sh", gpus: 2 })).toEqual({
      ok: false,
      output:
        "job request refused (gpus-above-grant): asked 2 GPU(s); the task is granted 0 GPU(s). Run on CPUs, or the SAM must request `gpu`",
    });
    expect((await call("job_output", { job: "999999" })).output).toBe(
      "job request refused (unknown-job): asked job 999999; this task started no jobs. A task may query, cancel or read only the jobs it submitted",
    );
  });
});
