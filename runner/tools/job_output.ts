// job_output: the end of a job's stdout or stderr file, read host side (no symlinks followed).
import { z } from "zod";
import type { JobBroker } from "../jobs/broker.ts";
import { describeBytes } from "../jobs/units.ts";
import { jobCall } from "./submit_job.ts";
import { defineTool, type Tool } from "./tool.ts";

export function jobOutputTool(broker: JobBroker): Tool {
  return defineTool({
    name: "job_output",
    effect: "read",
    description: new URL("./job_output.md", import.meta.url),
    input: z.object({
      job_id: z.string().regex(/^\d+$/, "must be a job id as submit_job returned it, e.g. 1234"),
      stream: z.enum(["stdout", "stderr"]).optional().describe("Which file to read (default stdout)."),
    }),
    async execute({ job_id, stream = "stdout" }) {
      return jobCall(async () => {
        const out = await broker.output(job_id, stream);
        if (out.sizeBytes === 0) return `Job ${job_id} ${stream} is empty (or the job has not started yet).`;
        const head = out.truncated
          ? `Job ${job_id} ${stream}: last ${describeBytes(out.text.length)} of ${describeBytes(out.sizeBytes)}:\n`
          : `Job ${job_id} ${stream}:\n`;
        return head + out.text;
      });
    },
  });
}
