// What a host-side component adds to one run (the SLURM job broker is the first): work-agent tools,
// a view of the history tape, and a hook when the run ends. Built by the component (runner/jobs),
// passed in by the run's setup (runner/run/setup.ts) through RunDeps.extensions: the component never
// imports the loop, and the loop knows extensions only by this shape.
import type { HistoryEvent, IntegrityKind } from "../memory/history-events.ts";
import type { Tool } from "../tools/tool.ts";

/** How the run ended, as the extension sees it (`undefined` when it threw before an outcome). */
export interface RunEnd {
  status: "passed" | "failed" | "blocked" | "cancelled";
  reason: string;
}

/** A refusal of the component's, for the run's integrity record (the run names role and tool call). */
export interface IntegrityNotice {
  kind: IntegrityKind;
  attempted: string;
  rule: string;
  action: string;
}

export interface RunExtension {
  /** Extra work-agent tools granted to this run. */
  tools?: readonly Tool[];
  /** Called with the history tape's append once the tape is open (on start and on every resume). */
  onHistory?(append: (event: HistoryEvent) => void): void;
  /** Called with the run's integrity recorder once the run's session is open (start and resume). */
  onIntegrity?(record: (notice: IntegrityNotice) => void): void;
  /**
   * Called with an append to the run's audit tape (an `event` record) once the tape is open, on start
   * and on every resume; appends after the run's end throw.
   */
  onAudit?(append: (event: string, data: Record<string, unknown>) => void): void;
  /**
   * Allow rules a person added at run time (runner/run/gates/approve-hosts.ts), joined to the host list
   * of every later sandbox that has one; asked at each sandbox start, after the grant comparison.
   */
  networkAllow?(): readonly string[];
  /**
   * Ends everything of the agent's that this component runs (SLURM jobs), `keep_jobs` or not, and
   * waits for it with a bound: called before the checks of each iteration and before the hidden
   * assets go back at the run's end. Returns what is still alive after the bound (empty: nothing).
   */
  endAgentWork?(reason: string): Promise<string[]>;
  /** Called once when the run returns (with its outcome) or throws (without one). */
  end?(outcome: RunEnd | undefined): Promise<void>;
}

/** The tools every extension adds, in order. */
export function extensionTools(extensions: readonly RunExtension[] | undefined): Tool[] {
  return (extensions ?? []).flatMap((extension) => extension.tools ?? []);
}
