// job_status: the SLURM state of one of the task's jobs; with wait_seconds it waits host-side
// (backing off between queries) until the job ends or the time is up, so the model need not poll.
import { z } from "zod";
import { defineTool, type Tool } from "../tools/tool.ts";
import type { JobBroker } from "./broker.ts";
import { LIVE_STATES, type SlurmJobInfo } from "./slurm.ts";
import { jobCall, jobRef } from "./submit_job.ts";

export const MAX_WAIT_SECONDS = 300;

export function jobStatusTool(broker: JobBroker): Tool {
  return defineTool({
    name: "job_status",
    effect: "read",
    description: new URL("./job_status.md", import.meta.url),
    input: z.object({
      job: jobRef,
      wait_seconds: z
        .number()
        .int()
        .min(0)
        .max(MAX_WAIT_SECONDS)
        .optional()
        .describe(`Wait up to this many seconds for the job to end (0 to ${MAX_WAIT_SECONDS}; default 0).`),
    }),
    async execute({ job, wait_seconds = 0 }, ctx) {
      return jobCall(async () => describeStatus(await broker.status(job, wait_seconds * 1000, ctx.signal)));
    },
  });
}

function describeStatus(info: SlurmJobInfo): string {
  const parts = [`Job ${info.jobId}: ${info.state}`];
  if (info.exitCode) parts.push(`exit code ${info.exitCode} (exit:signal)`);
  if (info.reason) parts.push(`reason ${info.reason}`);
  if (info.elapsed) parts.push(`elapsed ${info.elapsed}`);
  if (info.timeLimit) parts.push(`time limit ${info.timeLimit}`);
  const live = LIVE_STATES.has(info.state);
  return `${parts.join(", ")}.${live ? " Still live: call job_status again with wait_seconds." : " Read its output with job_output."}`;
}
