// What the run's concerns (gates, sandboxes, task-folder guard) see of a run: its records, its
// dependencies, the audit tape and the live display. The session (session.ts) is one; the concerns
// import this, never the session, so the run's files stay free of circles.
import type { AuditTape } from "../../audit/tape.ts";
import type { HistoryTape } from "../../memory/history.ts";
import type { SandboxSpec } from "../../policy/spec.ts";
import type { RunFolder } from "../../run-folder/folder.ts";
import type { LimitConfig, RunState } from "../../run-folder/state.ts";
import type { SamDocument } from "../../sam/types.ts";
import type { RunDeps } from "./deps.ts";
import type { IntegrityInput } from "./integrity.ts";
import type { RunClock, RunStop } from "./limits.ts";
import type { RunStatus } from "./status.ts";

/** What a run is made of on disk: the same for a start and a resume. */
export interface RunRecords {
  home: string;
  folder: RunFolder;
  sam: SamDocument;
  spec: SandboxSpec;
  state: RunState;
  limits: LimitConfig;
  history: HistoryTape;
}

export interface RunContext extends Readonly<RunRecords> {
  readonly deps: RunDeps;
  readonly audit: AuditTape;
  /** The run's one clock (limits.ts): a wait that is not the run's holds it. */
  readonly clock: RunClock;
  /** The run's one stop (limits.ts): cancel, deadline, and a signal's interruption. */
  readonly stop: RunStop;
  /** The live display's status, patched. */
  emit(patch: Partial<RunStatus>): void;
  /** A defence refused, undid or overrode something an agent did (runner/run/session/integrity.ts). */
  recordIntegrity(input: IntegrityInput): void;
}
