// What a run's history tape holds (runner/memory/history.ts writes and reads it): one event a
// line, each with a sequence number and a time. The types only, so that what reads the events
// (runner/memory/prompt-history.ts, the report) needs no tape.
import type { AuditHead } from "../audit/types.ts";

/**
 * `http` and `connect` came through the proxy; `direct` (a TCP connection that ignored the proxy),
 * `dns` (a query for a name) and `udp` (any other datagram) were caught in the sandbox's namespace
 * by the capture (runner/network/run-proxy.ts) and are always refused.
 */
export type ConnectionKind = "http" | "connect" | "direct" | "dns" | "udp";

export interface ConnectionRecord {
  /** ISO time the request arrived. */
  time: string;
  kind: ConnectionKind;
  host: string;
  port: number;
  /** The address connected to (allowed ones). */
  address?: string;
  allowed: boolean;
  /** The allow rule that matched, or the deny rule / reason kind that refused. */
  rule: string;
  reason?: string;
  /** Bytes from the sandbox to the host, and back. */
  bytesOut: number;
  bytesIn: number;
  durationMs: number;
}

/**
 * What kind of defence refused, undid or overrode something an agent did (docs/integrity.md says the
 * rule behind each and what is not counted).
 */
export const INTEGRITY_KINDS = [
  "asset_write",
  "asset_tampering",
  "asset_cleanup",
  "deletion_undone",
  "output_refused",
  "network_refused",
  "allowlist_refused",
  "job_after_work",
  "review_override",
  "overflow",
] as const;
export type IntegrityKind = (typeof INTEGRITY_KINDS)[number];

/** The tool call an integrity event came from: the audit tape's call record that asked for it. */
export interface IntegrityCall {
  /** Sequence number of the audit tape's call record whose response holds the tool call. */
  seq: number;
  /** The tool call's id in that response. */
  id: string;
  tool: string;
}

export type HistoryEvent =
  | { type: "run_start"; sam: string; sha256: string; backend: string }
  | ({
      /** One connection through the run's proxy, allowed or refused (runner/network/proxy.ts). */
      type: "network";
      sandbox: string;
    } & ConnectionRecord)
  | {
      /** The first connection through a host a person approved at run time (runner/run/gates/approve-hosts.ts). */
      type: "approved_host_used";
      /** The approval request that added it. */
      id: string;
      rule: string;
      sandbox: string;
      host: string;
      port: number;
      address?: string;
    }
  | { type: "resumed"; fromPhase: string; iteration: number; discardedEvents: number }
  | {
      /**
       * A person's decision on the running run (`scifi ctl`, runner/run/session/control.ts): limits changed,
       * a pause asked for or taken, a resume; `refused` when the run could not apply it.
       */
      type: "control";
      iteration: number;
      /** `folder`: control/ itself could not be read (not a folder), with `refused` saying why. */
      action: "limits" | "pause" | "paused" | "resume" | "folder";
      /** The decision file in the run folder's control/ (absent for `paused`, the run's own). */
      decision?: string;
      by?: string;
      /** Limits as they were and as they are now (only those the decision named). */
      from?: Record<string, number>;
      to?: Record<string, number>;
      refused?: string;
      /** The phase a pause stopped after. */
      phase?: string;
    }
  | { type: "iteration_start"; iteration: number }
  | { type: "iteration_end"; iteration: number; passed: boolean; reason?: string; audit?: AuditHead }
  | {
      type: "prescan";
      iteration: number;
      node: string;
      rank: number;
      skills: string[];
      direction: string;
      /** Skills the pre-scan added beyond the SAM's list (site policy `prescanAddsSkills`). */
      addedSkills?: string[];
    }
  | {
      /** The view of group or global memory the pre-scan got (runner/run/session/shared-memory.ts). */
      type: "memory_view";
      iteration: number;
      level: "group" | "global";
      ref: string;
      sha256: string;
      /** Ids of the entries it drew on (the last 50), and how many there were. */
      entries: string[];
      entryCount: number;
      items: number;
      omitted: number;
      tokens: number;
      budget: number;
      before?: string;
    }
  | { type: "direction_change"; iteration: number; from: string; to: string }
  | { type: "work_end"; iteration: number; node: string; exit: string; steps: number; toolCalls: number }
  | {
      type: "check";
      iteration: number;
      node: string;
      check: string;
      passed: boolean;
      exitCode: number;
      timedOut?: boolean;
      /** Tail of the check's output (runner/run/checks/checks.ts caps it). Older runs wrote `detail`. */
      output?: string;
      detail?: string;
      /** The sandbox it ran in (absent in older runs; its duration is in state.json's checks). */
      sandbox?: string;
      /** A compare stage: where its withheld output is kept for people (run-folder path). */
      heldOutput?: string;
    }
  | {
      type: "verdict";
      iteration: number;
      node: string;
      passed: boolean;
      items: { id: string; pass: boolean; evidence?: string }[];
      checksPassed: boolean;
      /** The review's whole verdict (runs before these fields only have items and checksPassed). */
      findings?: string[];
      fixes?: string[];
      rankAdjustment?: number;
      blocked?: string;
    }
  | { type: "node_complete"; iteration: number; node: string }
  | {
      /** A request of the approval gate and what became of it (runner/approval/gate.ts). */
      type: "approval";
      iteration: number;
      id: string;
      action: string;
      state: "requested" | "approved" | "denied" | "timed_out";
      summary: string;
      who?: string;
      at?: string;
      note?: string;
    }
  | { type: "limit"; iteration: number; limit: string; detail: string }
  | {
      /**
       * A pass's history compacted to stay inside the model's context window (runner/run/session/context-budget.ts):
       * at a compaction point, or after the provider refused a request as too long (`retried`); or a
       * single call's brief built again shorter after such a refusal (runner/agents/refused-brief.ts).
       */
      type: "context";
      iteration: number;
      action: "compacted" | "retried";
      /** A single call's retry (prescan, final_review): its role; absent for a pass's compaction. */
      role?: string;
      /** Prompt tokens the requests are kept under. */
      budget: number;
      /** Tool outputs and inputs elided. */
      elided: number;
      /** Estimated prompt tokens before and after. */
      tokensBefore: number;
      tokensAfter: number;
    }
  | {
      type: "tampering";
      iteration: number;
      file: string;
      expected: string;
      actual: string;
      /** What was wrong: changed content, a link, a FIFO, a missing or replaced folder. */
      problem?: string;
    }
  | { type: "asset_cleanup"; iteration: number; removed: string[] }
  | {
      /** A defence refused, undid or overrode something an agent did (runner/run/session/integrity.ts). */
      type: "integrity";
      iteration: number;
      kind: IntegrityKind;
      /** The agent role (work, review) or the sandbox (a check's) it came from. */
      role: string;
      call?: IntegrityCall;
      /** What was attempted, in the runner's words (agent text quoted). */
      attempted: string;
      /** The rule that stopped it. */
      rule: string;
      /** What the runner did. */
      action: string;
    }
  | {
      type: "sandbox_died";
      iteration: number;
      phase: string;
      deaths: number;
      detail: string;
      /** What ran in it may have ended it (revive.ts): the command failed and was not run again. */
      inside?: true;
    }
  | {
      type: "deliverable_links";
      iteration: number;
      links: { path: string; target: string; problem: "outside" | "dangling" }[];
    }
  | {
      /**
       * At start: SAM files and check assets that differ from what the last run of the same task
       * folder captured (a person's edit, or what an earlier run left): named, for a person to tell.
       */
      type: "assets_changed";
      iteration: number;
      /** The run that captured them last. */
      since: string;
      files: { rel: string; was: string; now: string }[];
    }
  | { type: "final_review"; groupSuggestions: number; globalSuggestions: number }
  | {
      /** A critique of a passed node (runner/run/phases/critique.ts); the whole record: runs/<id>/critique/itN.json. */
      type: "critique";
      iteration: number;
      node: string;
      mode: string;
      effect: string;
      traced: number;
      quantities: number;
      /** Trace citations the runner could not verify. */
      unverifiedCitations: number;
      findings: { type: string; severity: string; item: string; verified: boolean; reason: string }[];
      packs?: string[];
      failed?: string;
    }
  | {
      /** A SLURM job request of the agent, as the host-side broker decided it (details: runs/<id>/jobs/). */
      type: "job";
      action: string;
      decision: "allowed" | "refused" | "failed";
      jobId?: string;
      rule?: string;
      message?: string;
    }
  | {
      type: "run_end";
      outcome: "passed" | "failed" | "blocked" | "cancelled";
      reason: string;
      /** The audit tape's head when the run ended (runs before this field have none). */
      audit?: AuditHead;
    };

export type HistoryRecord = HistoryEvent & { seq: number; time: string };
