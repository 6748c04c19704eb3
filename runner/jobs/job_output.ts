// job_output: the end of a job's stdout or stderr file, read host side (no symlinks followed).
import { z } from "zod";
import { defineTool, type Tool } from "../tools/tool.ts";
import type { JobBroker } from "./broker.ts";
import { jobCall, jobRef } from "./submit_job.ts";
import { describeBytes } from "./units.ts";

export function jobOutputTool(broker: JobBroker): Tool {
  return defineTool({
    name: "job_output",
    effect: "read",
    description: new URL("./job_output.md", import.meta.url),
    input: z.object({
      job: jobRef,
      stream: z.enum(["stdout", "stderr"]).optional().describe("Which file to read (default stdout)."),
    }),
    async execute({ job, stream = "stdout" }) {
      return jobCall(async () => {
        const out = await broker.output(job, stream);
        if (out.sizeBytes === 0)
          return `Job ${out.jobId} ${stream} is empty (or the job has not started yet).`;
        const head = out.truncated
          ? `Job ${out.jobId} ${stream}: last ${describeBytes(out.text.length)} of ${describeBytes(out.sizeBytes)}:\n`
          : `Job ${out.jobId} ${stream}:\n`;
        return head + out.text;
      });
    },
  });
}
