// The one error a policy refusal throws: which rule, which path, and what to do about it.

/** Ids of every policy rule; docs/sandbox.md lists them with their meaning. */
export type PolicyRule =
  | "site-policy-invalid"
  | "task-folder-denied"
  | "sam-file-outside-task"
  | "task-file-missing"
  | "task-file-outside-task"
  | "mount-target-invalid"
  | "mount-target-reserved"
  | "mount-overlap"
  | "mount-missing"
  | "mount-denied"
  | "mount-outside-roots"
  | "mount-rw-not-allowed"
  | "mount-inside-writable"
  | "network-not-allowed"
  | "network-host-not-allowed"
  | "gpu-over-limit"
  | "gpu-not-on-host"
  | "cpus-over-limit"
  | "memory-over-limit"
  | "walltime-over-limit"
  | "scratch-over-limit"
  | "jobs-approval-unbound";

import { RunEnding } from "../run-ending.ts";

export class PolicyRefused extends RunEnding {
  override name = "PolicyRefused";
  readonly rule: PolicyRule;
  /** The path (or setting) the rule refused. */
  readonly path: string;

  /** `what` says what was refused and why; `fix` says what the user can do. */
  constructor(rule: PolicyRule, path: string, what: string, fix: string) {
    // Inside a run (a sandbox start resolves the grant again) it ends the run; at setup, exit code 2.
    super(`policy refused [${rule}] ${path}: ${what}. ${fix}`, {
      status: "failed",
      limit: "grant",
      prefix: "grant",
    });
    this.rule = rule;
    this.path = path;
  }
}
