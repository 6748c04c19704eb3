// Every place a run waits for a person (runner/approval/gate.ts, docs/approval.md): `run` before the
// first iteration, `network` before a sandbox with network starts, `delete` around the work pass and
// the checks that run the agent's code in the task folder, `finish` before a PASS. Each request and
// decision goes on the history and the audit tape.
import { join } from "node:path";
import { type ApprovalRecord, runStartRequest } from "../../approval/gate.ts";
import type { SandboxSpec } from "../../policy/spec.ts";
import { checkEvidence, evidenceLines } from "../../run-folder/check-evidence.ts";
import type { CheckOutcome } from "../../run-folder/state.ts";
import type { RunContext } from "../session/context.ts";
import type { SandboxRole } from "../session/sandboxes.ts";
import { DeletionGuard, type Removal } from "./deletion.ts";

const AFTER_JOBS = "by the agent's work that outlived its sandbox (a SLURM job of the run)";

export class RunGates {
  readonly #session: RunContext;
  constructor(session: RunContext) {
    this.#session = session;
  }

  /** Tells the gate where its records go and what the live display says while it waits. */
  attach(): void {
    const session = this.#session;
    const { state } = session;
    session.deps.approval?.attach({
      record: (record) => this.#record(record),
      iteration: () => state.iteration,
      onWaiting: (request) =>
        session.emit({
          notice: request
            ? `awaiting approval ${request.id} (${request.action}): scifi approve ${state.runId} ${request.id} | scifi deny ${state.runId} ${request.id} --reason TEXT`
            : undefined,
        }),
    });
  }

  /** `approval: [run]`: undefined when the task may start, else why not (the run ends blocked). */
  async mayStart(): Promise<string | undefined> {
    const { deps, sam } = this.#session;
    const approval = deps.approval;
    if (!approval?.requires("run")) return undefined;
    // The daemon asks the same question before it starts the worker: one request, one decision.
    // Nothing runs while it waits, so the wait is not the run's wall time (the clock is held).
    const answer = await this.#session.clock.hold(() =>
      approval.ask(runStartRequest({ name: sam.metadata.name, samFile: sam.file }), { once: true }),
    );
    if (answer.approved) return undefined;
    const d = answer.decision;
    return `a person (${d.who}) did not let the task start: ${d.note ?? "no reason given"}`;
  }

  /**
   * The network a sandbox starts with: `approval: [network]` asks once a run before one with network
   * starts (a denial starts it without); hosts a person approved at run time join its host list
   * (after the grant comparison).
   */
  async network(spec: SandboxSpec, role: SandboxRole): Promise<SandboxSpec> {
    const { deps, sam } = this.#session;
    let granted = spec;
    if ((granted.network || granted.networkRules) && deps.approval?.requires("network")) {
      const answer = await deps.approval.ask(
        {
          action: "network",
          summary: `start the ${role} sandbox of ${sam.metadata.name} with network access`,
          detail: granted.network
            ? `image ${granted.image}; network: on (the SAM asks for it and the site allows it)`
            : `image ${granted.image}; network: only ${granted.networkRules?.allow.join(", ")}, through the run's proxy`,
        },
        { once: true },
      );
      if (!answer.approved) granted = { ...granted, network: false, networkRules: undefined };
    }
    const approvedHosts = (deps.extensions ?? []).flatMap((e) => e.networkAllow?.() ?? []);
    if (granted.networkRules && approvedHosts.length > 0)
      granted = {
        ...granted,
        networkRules: { ...granted.networkRules, allow: [...granted.networkRules.allow, ...approvedHosts] },
      };
    return granted;
  }

  /**
   * `approval: [delete]`: the files of the task folder at the first work pass are copied into the run
   * folder and compared after every tool call (runner/run/gates/deletion.ts); undefined without it.
   */
  deletionGuard(): DeletionGuard | undefined {
    const { deps } = this.#session;
    if (!deps.approval?.requires("delete")) return undefined;
    // One guard a run process: what it verified (file fingerprints) is not read again.
    this.#guard ??= DeletionGuard.open({
      taskDir: this.#session.spec.taskDir,
      dir: this.#deletionDir(),
      gate: deps.approval,
      onUndone: (removals, when) => this.#undone(removals, when),
    });
    return this.#guard;
  }

  /** Deletions a person did not approve, as one integrity event (a job's after the work: its own kind). */
  #undone(removals: readonly Removal[], when: string | undefined): void {
    const shown = removals.slice(0, 20).map((r) => `${JSON.stringify(r.file.rel)} (${r.kind})`);
    const more = removals.length > shown.length ? ` and ${removals.length - shown.length} more` : "";
    this.#session.recordIntegrity({
      kind: when === AFTER_JOBS ? "job_after_work" : "deletion_undone",
      ...(when === undefined ? {} : { role: "work", call: null }),
      attempted: `removed, truncated or rewrote start files ${when ?? "in a tool call"}: ${shown.join(", ")}${more}`,
      rule: "approval: [delete]: destroying a start file needs a person's yes",
      action: "put back from the runner's copy; a person did not approve it",
    });
  }

  /**
   * `approval: [delete]`, with every job of the agent's ended (RunSession.endAgentWork) and before
   * the checks: a SLURM job of the run that removed or rewrote a start file after the agent's last
   * tool call is undone host-side and asked, like a background process of the work pass.
   */
  async afterAgentJobs(): Promise<void> {
    await this.deletionGuard()?.afterPass(AFTER_JOBS);
  }

  /**
   * `approval: [finish]`: a person confirms the PASS (the run waits, no sandbox open). Returns the
   * failure reason when they deny it, undefined when confirmed or not required.
   */
  async confirmPass(): Promise<string | undefined> {
    const { deps, sam, state, folder } = this.#session;
    if (!deps.approval?.requires("finish")) return undefined;
    const answer = await deps.approval.ask({
      action: "finish",
      summary: `mark ${sam.metadata.name} passed after ${state.iteration} iteration(s)`,
      detail: finishDetail(folder.dir, state.checks ?? []).join("\n"),
    });
    if (answer.approved) return undefined;
    return `a person (${answer.decision.who}) did not confirm the PASS: ${answer.decision.note ?? "no reason given"}`;
  }

  /**
   * `critique: approve` (approval action `critique`): a passed node with likely mismatches the
   * critique found, verified on the code, waits for a person. Returns why not when they deny it (the
   * findings go back to the work agent with that reason), undefined when accepted.
   */
  async acceptCritique(
    node: string,
    likely: readonly {
      type: string;
      item: string;
      reason: string;
      citations: {
        verified: boolean;
        citation: { file: string; line: number };
        lines?: { n: number; text: string }[];
      }[];
    }[],
    incomplete?: string,
  ): Promise<string | undefined> {
    const { deps, sam } = this.#session;
    if (!deps.approval?.requires("critique")) return undefined;
    // Each finding with the verified lines themselves (as the runner read them), not only their numbers.
    const lines = likely.flatMap((f) => {
      const at = f.citations.filter((c) => c.verified);
      return [
        `- ${f.type} at ${f.item} (${at.map((c) => `${c.citation.file}:${c.citation.line}`).join(", ")}): ${f.reason}`,
        ...at.flatMap((c) => (c.lines ?? []).map((l) => `    ${c.citation.file}:${l.n}| ${l.text}`)),
      ];
    });
    const what =
      likely.length > 0
        ? `${likely.length} likely mismatch(es) the critique found`
        : "a critique that could not be completed";
    const answer = await deps.approval.ask({
      action: "critique",
      summary: `accept the PASS of ${node} of ${sam.metadata.name} with ${what}`,
      detail: [
        `checks and review passed; the critique (a model's reading of the code) found:`,
        ...(lines.length > 0 ? lines : ["(no likely mismatch verified)"]),
        ...(incomplete ? [`the critique could not be completed: ${incomplete}`] : []),
      ].join("\n"),
    });
    if (answer.approved) return undefined;
    return `a person (${answer.decision.who}) did not accept the critique's likely mismatch(es): ${answer.decision.note ?? "no reason given"}`;
  }

  #guard: DeletionGuard | undefined;

  #deletionDir(): string {
    return join(this.#session.folder.dir, "deletion");
  }

  /** A request or decision of the approval gate, on the history tape and the audit tape. */
  #record(record: ApprovalRecord): void {
    const session = this.#session;
    const { request } = record;
    const decision = "decision" in record ? record.decision : undefined;
    session.history.append({
      type: "approval",
      iteration: session.state.iteration,
      id: request.id,
      action: request.action,
      state: record.state,
      summary: request.summary,
      ...(decision ? { who: decision.who, at: decision.time } : {}),
      ...(decision?.note ? { note: decision.note } : {}),
    });
    session.audit.append({
      kind: "event",
      event: `approval_${record.state}`,
      data: {
        id: request.id,
        action: request.action,
        summary: request.summary,
        why: request.why,
        ...(record.state === "requested" ? { detail: request.detail, deadline: request.deadline } : {}),
        ...(decision ? { who: decision.who, at: decision.time, note: decision.note ?? "" } : {}),
      },
    });
  }
}

/**
 * What a person confirms a PASS on: each check's stage, exit code, duration, sandbox and the tail of
 * its output (a compare stage's too: withheld from the agents, not from people), then the review.
 */
export function finishDetail(runDir: string, checks: readonly CheckOutcome[]): string[] {
  const lines = checks.flatMap((c) => evidenceLines(checkEvidence(runDir, c)));
  return [`checks (${checks.length}):`, ...(lines.length > 0 ? lines : ["(none)"]), "review: passed"];
}
