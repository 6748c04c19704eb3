// job_cancel: cancels one of the task's own jobs (scancel, host side).
import { z } from "zod";
import type { JobBroker } from "../jobs/broker.ts";
import { jobCall } from "./submit_job.ts";
import { defineTool, type Tool } from "./tool.ts";

export function jobCancelTool(broker: JobBroker): Tool {
  return defineTool({
    name: "job_cancel",
    effect: "write",
    description: new URL("./job_cancel.md", import.meta.url),
    input: z.object({
      job_id: z.string().regex(/^\d+$/, "must be a job id as submit_job returned it, e.g. 1234"),
    }),
    async execute({ job_id }) {
      return jobCall(async () => {
        const r = await broker.cancel(job_id);
        return r.cancelled
          ? `Job ${job_id} cancelled.`
          : `Job ${job_id} had already ended (${r.state}); nothing to cancel.`;
      });
    },
  });
}
