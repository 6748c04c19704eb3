// Typed errors of the job system. A refusal (JobRefused) is a decision of the broker, reported to the
// agent as readable text; SlurmUnavailable and SlurmError are failures of the cluster itself.

/** Which broker rule refused a request: stable names, used in tests, docs and the history tape. */
export type JobRule =
  | "jobs-not-granted"
  | "jobs-disabled-by-site"
  | "script-outside-task"
  | "script-not-found"
  | "script-not-file"
  | "time-above-grant"
  | "gpus-above-grant"
  | "cpus-above-grant"
  | "memory-above-grant"
  | "bad-request"
  | "unknown-job"
  | "concurrent-cap"
  | "total-cap"
  | "output-not-file"
  | "not-approved";

/** The broker refused a request. The message says which rule, what was asked and what is granted. */
export class JobRefused extends Error {
  override name = "JobRefused";
  readonly rule: JobRule;
  readonly asked: string;
  readonly granted: string;
  constructor(rule: JobRule, asked: string, granted: string, hint?: string) {
    super(`job request refused (${rule}): asked ${asked}; ${granted}${hint ? `. ${hint}` : ""}`);
    this.rule = rule;
    this.asked = asked;
    this.granted = granted;
  }
}

/** The SLURM client commands are missing or the controller does not answer. */
export class SlurmUnavailable extends Error {
  override name = "SlurmUnavailable";
  constructor(detail: string) {
    super(
      `SLURM is unavailable: ${detail}\n  fix: start a cluster with 'bash scripts/start-slurm.sh' (root) or run on a login node`,
    );
  }
}

/** A SLURM command answered with an error (sbatch rejected the job, scancel failed, ...). */
export class SlurmError extends Error {
  override name = "SlurmError";
  readonly command: string;
  readonly stderr: string;
  constructor(command: string, stderr: string) {
    super(`${command} failed: ${stderr.trim() || "(no error text)"}`);
    this.command = command;
    this.stderr = stderr;
  }
}
