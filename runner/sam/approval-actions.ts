// The fixed vocabulary of actions a human may have to approve (SAM key `approval:`, site policy
// `approval.require`). A name outside it is an error with a "did you mean": a safety key either
// works or is an error (docs/approval.md says what each action covers and what it does not).
import { closest } from "./suggest.ts";

export const APPROVAL_ACTIONS = ["submit_job", "network", "delete", "finish", "run", "critique"] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

/** What each action gates, in one line (validate's messages and the docs say the same). */
export const APPROVAL_ACTION_HELP: Readonly<Record<ApprovalAction, string>> = {
  submit_job: "every SLURM job the agent submits (the batch script and resources are shown)",
  network: "starting a sandbox with network access",
  delete: "removing or emptying files that existed when the run started",
  finish: "a person confirms a PASS before the run is marked passed",
  run: "a daemon task waits before it starts",
  critique:
    "a PASS with likely mismatches the critique found waits for a person (the same as `critique: approve`)",
};

/**
 * Actions named in the vocabulary that this version does not gate yet: naming one is an error, never
 * a silent no-op (trust.md rule 7). None at present (`delete` is enforced by runner/run/gates/deletion.ts).
 */
export const NOT_ENFORCED: ReadonlySet<ApprovalAction> = new Set([]);

/** The error text for an action that exists but is not enforced yet; undefined when it is. */
export function notEnforcedMessage(name: ApprovalAction): string | undefined {
  return NOT_ENFORCED.has(name)
    ? `approval action \`${name}\` (${APPROVAL_ACTION_HELP[name]}) is not enforced in this version, so it cannot be required; see docs/approval.md`
    : undefined;
}

export function isApprovalAction(name: string): name is ApprovalAction {
  return (APPROVAL_ACTIONS as readonly string[]).includes(name);
}

/** The error text for an unknown action name, with a "did you mean" when one is close. */
export function unknownActionMessage(name: string): string {
  const guess = closest(name, APPROVAL_ACTIONS) ?? (name === "submit" ? "submit_job" : undefined);
  return `unknown approval action \`${name}\`${guess ? `; did you mean \`${guess}\`?` : ""}; known actions: ${APPROVAL_ACTIONS.join(", ")}`;
}

/** Site-required actions plus the SAM's own (a SAM cannot lift what the site requires). */
export function requiredActions(
  sam: readonly string[] | undefined,
  site: readonly string[] | undefined,
): ApprovalAction[] {
  const all = new Set([...(site ?? []), ...(sam ?? [])]);
  return APPROVAL_ACTIONS.filter((a) => all.has(a));
}
