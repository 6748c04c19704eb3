// The agent's job tools for one task run. Empty unless the task is granted jobs, so a SAM without
// `jobs: slurm` is never even offered them (the broker refuses again if called anyway).

import type { Tool } from "../tools/tool.ts";
import type { JobBroker } from "./broker.ts";
import { jobCancelTool } from "./job_cancel.ts";
import { jobOutputTool } from "./job_output.ts";
import { jobStatusTool } from "./job_status.ts";
import { submitJobTool } from "./submit_job.ts";

/** `networkNote`: said with every submission (a task whose host list its jobs do not get). */
export function jobTools(broker: JobBroker, networkNote?: string): Tool[] {
  if (!broker.granted) return [];
  return [
    submitJobTool(broker, networkNote),
    jobStatusTool(broker),
    jobCancelTool(broker),
    jobOutputTool(broker),
  ];
}
