// job_cancel: cancels one of the task's own jobs (scancel, host side).
import { z } from "zod";
import { defineTool, type Tool } from "../tools/tool.ts";
import type { JobBroker } from "./broker.ts";
import { jobCall, jobRef } from "./submit_job.ts";

export function jobCancelTool(broker: JobBroker): Tool {
  return defineTool({
    name: "job_cancel",
    effect: "write",
    description: new URL("./job_cancel.md", import.meta.url),
    input: z.object({
      job: jobRef,
    }),
    async execute({ job }) {
      return jobCall(async () => {
        const r = await broker.cancel(job);
        return r.cancelled
          ? `Job ${r.jobId} cancelled.`
          : `Job ${r.jobId} had already ended (${r.state}); nothing to cancel.`;
      });
    },
  });
}
