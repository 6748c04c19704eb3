// submit_job: submits a batch script from the task folder to SLURM through the task's job broker
// (host side: the sandbox has no SLURM client or munge socket). Offered only when the task is granted jobs.
import { z } from "zod";
import { defineTool, type Tool, type ToolContext, type ToolOutcome } from "../tools/tool.ts";
import type { JobBroker } from "./broker.ts";
import { JobRefused } from "./errors.ts";

export function submitJobTool(broker: JobBroker, networkNote?: string): Tool {
  return defineTool({
    name: "submit_job",
    effect: "exec",
    description: new URL("./submit_job.md", import.meta.url),
    input: z.object({
      script: z
        .string()
        .min(1)
        .describe("Batch script in the task folder, e.g. `jobs/run.sh` or `/task/jobs/run.sh`."),
      args: z.array(z.string()).max(64).optional().describe("Arguments passed to the script."),
      name: z.string().max(40).optional().describe("Job name (default: the script's file name)."),
      time: z
        .string()
        .optional()
        .describe(
          "Time limit: minutes (`30`), `MM:SS`, `H:MM:SS` or `D-H:MM:SS`. Default: the task's whole grant.",
        ),
      cpus: z.number().int().min(1).optional().describe("CPUs for the job (default 1)."),
      memory: z
        .string()
        .optional()
        .describe("Memory, e.g. `512M` or `4G`. Default: the task's memory grant."),
      gpus: z.number().int().min(0).optional().describe("GPUs for the job (default 0)."),
    }),
    async execute(input, ctx) {
      return jobCall(async () => {
        // A submission that waits for a person stops the work sandbox meanwhile (a fresh one starts
        // with the next call); the agent is told.
        let stopped = false;
        // (Absent when a host-only caller runs the tool without a sandbox.)
        const sandbox = ctx.sandbox as ToolContext["sandbox"] | undefined;
        const job = await broker.submit(
          input,
          sandbox?.suspend && sandbox.resume
            ? {
                suspend: async () => {
                  stopped = true;
                  await sandbox.suspend?.();
                },
                resume: async () => {
                  await sandbox.resume?.();
                },
              }
            : undefined,
        );
        const lines = [
          `Submitted job ${job.jobId} (${job.name}): time ${job.time}, ${job.cpus} CPU(s), ${job.memory}, ${job.gpus} GPU(s).`,
          `Its stdout goes to ${job.stdout}, stderr to ${job.stderr} (read them with job_output).`,
          "Wait with job_status and wait_seconds (it waits host-side); do not poll in a tight loop.",
        ];
        if (networkNote) lines.push(`Network: ${networkNote}.`);
        if (stopped) {
          lines.push(
            "A person approved it; while waiting the sandbox was stopped and a fresh one started: /tmp and background processes are gone, the task folder is as it was.",
          );
        }
        if (job.ignoredDirectives.length > 0) {
          lines.push(
            `Ignored #SBATCH lines (resources come only from this tool's arguments): ${job.ignoredDirectives.join(" | ")}`,
          );
        }
        return lines.join("\n");
      });
    },
  });
}

/** How the other job tools name a job: its id, or the name given at submit (its latest job). */
export const jobRef = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,40}$/, "must be a job id (e.g. 1234) or the job name given to submit_job")
  .describe("Job id as submit_job returned it, or the job's name (then its latest job of that name).");

/** Runs a broker call; a refusal becomes an error text the model can act on (which rule, what is granted). */
export async function jobCall(body: () => Promise<string>): Promise<ToolOutcome> {
  try {
    return { ok: true, output: await body() };
  } catch (error) {
    if (error instanceof JobRefused) return { ok: false, output: error.message };
    throw error;
  }
}
