// What a run needs from outside (a sandbox backend, the gateway, the policy, the run's extensions),
// what starts one, and what it returns. Composed once by the run's setup (setup.ts) for a start
// and a resume alike.
import type { ApprovalGate } from "../../approval/gate.ts";
import type { AuditTape } from "../../audit/tape.ts";
import type { CritiqueMode } from "../../critique/schema.ts";
import type { RunExtension } from "../../extension/run-extension.ts";
import type { Purse } from "../../llm/purse.ts";
import type { Model } from "../../llm/types.ts";
import type { SandboxSpec } from "../../policy/spec.ts";
import type { LimitConfig, Outcome, RunStarter, RunState } from "../../run-folder/state.ts";
import type { SamDocument } from "../../sam/types.ts";
import type { SandboxBackend } from "../../sandbox/types.ts";
import type { RunStatus } from "./status.ts";

export interface RunDeps {
  backend: SandboxBackend;
  /**
   * The site policy file the run read (`--site-policy`), when not the home's own: recorded in the
   * state, so `scifi ctl` judges a new limit against the policy the run runs under.
   */
  sitePolicyFile?: string;
  /**
   * Opens the gateway for this run; every call goes to `audit`. The gateway charges the run's purse
   * and checks its caps, waits a long retry-after only up to the clock's deadline, and every call
   * without a signal of its own gets the run's stop signal (a cancel, the deadline).
   */
  openModel(
    audit: AuditTape,
    run: { purse: Purse; deadline: () => number; signal: AbortSignal },
  ): Promise<Model & { close(): Promise<void> }>;
  /** Default-deny policy: the spec granted to this SAM. */
  resolveSpec(
    sam: SamDocument,
    runId: string,
    grant?: { taskFolderBaseBytes?: number },
  ): Promise<SandboxSpec> | SandboxSpec;
  /** Skill index and texts (optional: no skills when absent). */
  skills?: {
    index: string;
    names: readonly string[];
    /** The skills the SAM lists (those that exist): its work agent always gets them. */
    granted?: readonly string[];
    /** Site policy `prescanAddsSkills`: `names` then holds more than `granted`. */
    prescanAdds?: boolean;
    text(name: string): { text: string; sha256: string };
    /** A domain pack's critique context (undefined: the skill carries none). */
    critiqueContext?(name: string): { text: string; sha256: string } | undefined;
  };
  /** The run's critique mode (SAM and site, the stricter; docs/critique.md); absent: off. */
  critique?: CritiqueMode;
  /** Token budgets of the group and global memory views (site policy `memory`). */
  memoryTokens?: { group: number; global: number };
  /** Host-side additions (e.g. SLURM job tools when the SAM asks for jobs): work tools, a history view. */
  extensions?: readonly RunExtension[];
  /** Actions a person must approve (SAM `approval:` and the site policy): runner/approval/gate.ts. */
  approval?: ApprovalGate;
  onStatus?: (status: RunStatus) => void;
  /** Called once the run folder exists. */
  onCreated?: (dir: string) => void;
  /** The caller's cancel (its reason a RunCancelled): one input of the run's stop (limits.ts RunStop). */
  signal?: AbortSignal;
  /** Checked once the grant is resolved, before anything is written (a scripted model's script). */
  preflight?: () => Promise<void>;
}

export interface StartOptions {
  home: string;
  sam: SamDocument;
  limits?: Partial<LimitConfig>;
  /** Minted once by the run's setup (setup.ts). */
  runId: string;
  /** The model spec, kept in the state so `--resume` uses the same one. */
  model?: string;
  /** The tool that starts the run and reads its outcome, when nobody resumes it (RunState.startedBy). */
  startedBy?: RunStarter;
}

export interface RunResult {
  runId: string;
  dir: string;
  /** Meaningful only when `paused` is absent: a paused run has no outcome yet. */
  outcome: Outcome;
  /** Set when the run paused (`scifi ctl <run> pause`) instead of ending. */
  paused?: NonNullable<RunState["paused"]>;
  iterations: number;
  spent: RunState["spent"];
}
