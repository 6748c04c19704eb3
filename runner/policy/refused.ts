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
  | "scratch-over-limit";

export class PolicyRefused extends Error {
  override name = "PolicyRefused";
  readonly rule: PolicyRule;
  /** The path (or setting) the rule refused. */
  readonly path: string;

  /** `what` says what was refused and why; `fix` says what the user can do. */
  constructor(rule: PolicyRule, path: string, what: string, fix: string) {
    super(`policy refused [${rule}] ${path}: ${what}. ${fix}`);
    this.rule = rule;
    this.path = path;
  }
}
