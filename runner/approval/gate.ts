// The approval gate of one run. When the agent or the runner reaches a gated action, `ask` records a
// request in the run folder (stable id), tells the run's records and the site's onApproval hook,
// and waits for `scifi approve` / `scifi deny` (it polls the file: the decision may come from any
// process, after any restart). A decision is written to the history and the audit tape by the run
// itself (one writer per tape), with who, when and the note. Past the deadline the run ends blocked.
import { join } from "node:path";
import { runDir } from "../paths.ts";
import { RunEnding } from "../run-ending.ts";
import type { ApprovalAction } from "../sam/approval-actions.ts";
import { sha256 } from "../sha256.ts";
import { runSiteHook } from "../site-hook.ts";
import { visible, visibleBlock } from "../terminal-text.ts";
import {
  type ApprovalDecision,
  type ApprovalRequest,
  appendApprovalLine,
  approvalsFile,
  decide,
  readApprovalLines,
  viewsOf,
} from "./store.ts";

export const DEFAULT_APPROVAL_TIMEOUT_SEC = 24 * 3600;

/** A request waited past its deadline: the run ends blocked (exit 3), naming the request. */
export class ApprovalTimedOut extends RunEnding {
  override name = "ApprovalTimedOut";
  readonly requestId: string;
  constructor(request: ApprovalRequest) {
    super(
      `approval request ${request.id} (${request.action}: ${request.summary}) was not decided before ${request.deadline}`,
      { status: "blocked", limit: "approval" },
    );
    this.requestId = request.id;
  }
}

/** The reason a terminal prompt's signal carries when the request was settled without it. */
export class PromptWithdrawn extends Error {
  override name = "PromptWithdrawn";
}

export interface AskRequest {
  action: ApprovalAction;
  summary: string;
  detail: string;
  facts?: Record<string, string>;
}

/**
 * The question whether a task may start (`approval: [run]`). The daemon asks it before a worker starts
 * (runner/daemon/run-approval.ts) and the run before its first iteration: one question, so both make
 * the same request id and the run finds the daemon's decision instead of asking again.
 */
export function runStartRequest(task: { name: string | undefined; samFile: string }): AskRequest {
  return { action: "run", summary: `start task ${task.name}`, detail: `SAM ${task.samFile}` };
}

export interface GateAnswer {
  approved: boolean;
  request: ApprovalRequest;
  decision: ApprovalDecision;
}

/** What the gate tells the run's records: history event and audit event are built from it. */
export type ApprovalRecord =
  | { state: "requested"; request: ApprovalRequest }
  | { state: "approved" | "denied"; request: ApprovalRequest; decision: ApprovalDecision }
  | { state: "timed_out"; request: ApprovalRequest };

export interface ApprovalGateOptions {
  home: string;
  runId: string;
  /** Actions this run must ask for (SAM and site together). */
  required: readonly ApprovalAction[];
  /** Which of them the site requires (for the request's `why`). */
  siteRequired?: readonly ApprovalAction[];
  timeoutSec?: number;
  /** Site policy `approval.onApproval`: run with `sh -c` when a request is made. */
  onApproval?: string;
  pollMs?: number;
  signal?: AbortSignal;
  /**
   * `scifi run` in a terminal: offers to decide right there (y/n with the request shown). Its answer
   * is recorded like `scifi approve`/`deny` (the OS user); a decision from elsewhere aborts it.
   */
  prompt?: (request: ApprovalRequest, signal: AbortSignal) => Promise<TerminalAnswer | undefined>;
}

export interface TerminalAnswer {
  approved: boolean;
  note?: string;
}

export class ApprovalGate {
  readonly #o: ApprovalGateOptions;
  readonly #file: string;
  #record: (record: ApprovalRecord) => void = () => {};
  #iteration = () => 0;
  #onWaiting: (request: ApprovalRequest | undefined) => void = () => {};

  constructor(options: ApprovalGateOptions) {
    this.#o = options;
    this.#file = approvalsFile(options.home, options.runId);
  }

  get required(): readonly ApprovalAction[] {
    return this.#o.required;
  }

  requires(action: ApprovalAction): boolean {
    return this.#o.required.includes(action);
  }

  /**
   * Whether a person approved the run's own request for `action` (the one it waits for, not a host
   * asked for at run time): true only for an approval; pending, denied, timed out or never asked is
   * false. The jobs read it for `network` at each submission.
   */
  runWideApproved(action: ApprovalAction): boolean {
    const views = viewsOf(this.#o.runId, readApprovalLines(this.#file)).filter(
      (v) => v.request.action === action && v.request.waits !== false,
    );
    const last = views.at(-1);
    return last?.state === "approved";
  }

  /** The run connects its records (history + audit tape), its iteration and its live status. */
  attach(hooks: {
    record: (record: ApprovalRecord) => void;
    iteration: () => number;
    onWaiting?: (request: ApprovalRequest | undefined) => void;
  }): void {
    this.#record = hooks.record;
    this.#iteration = hooks.iteration;
    if (hooks.onWaiting) this.#onWaiting = hooks.onWaiting;
  }

  /**
   * Asks for approval and waits. A request not yet used by this run (one made before a restart) is
   * taken up again instead of being asked twice. Throws ApprovalTimedOut past the deadline.
   */
  async ask(
    ask: AskRequest,
    options: { once?: boolean; beforeWait?: () => Promise<void> } = {},
  ): Promise<GateAnswer> {
    if (options.once) {
      // Asked once a run (network, run): an earlier decision of the same request stands.
      const decided = viewsOf(this.#o.runId, readApprovalLines(this.#file)).find(
        (v) => v.request.id.startsWith(baseId(ask)) && sameContent(v.request, ask) && v.decision && v.used,
      );
      if (decided?.decision)
        return { approved: decided.decision.approved, request: decided.request, decision: decided.decision };
    }
    const request = this.#requestFor(ask);
    this.#onWaiting(request);
    const prompting = new AbortController();
    /** Why the terminal prompt is withdrawn, for its last line (who decided, or the deadline). */
    let withdrawn = "the run stopped waiting";
    if (this.#o.prompt) {
      this.#o
        .prompt(request, prompting.signal)
        .then((answer) => {
          if (answer && !prompting.signal.aborted)
            decide(this.#o.home, this.#o.runId, request.id, answer.approved, answer.note);
        })
        // Decided elsewhere first, or the terminal went away: the file has the decision or waits on.
        .catch(() => undefined);
    }
    try {
      const delay = this.#o.pollMs ?? 500;
      let waited = false;
      for (;;) {
        const view = viewsOf(this.#o.runId, readApprovalLines(this.#file)).find(
          (v) => v.request.id === request.id,
        );
        if (view?.decision) {
          const state = view.decision.approved ? "approved" : "denied";
          withdrawn = `${state} by ${view.decision.who} at ${view.decision.time}`;
          this.#record({ state, request, decision: view.decision });
          appendApprovalLine(this.#file, { type: "used", id: request.id, time: new Date().toISOString() });
          return { approved: view.decision.approved, request, decision: view.decision };
        }
        if (view?.state === "withdrawn") throw new Error(`approval request ${request.id} was withdrawn`);
        if (view?.state === "timed_out" || Date.now() >= Date.parse(request.deadline)) {
          if (view?.state !== "timed_out")
            appendApprovalLine(this.#file, {
              type: "timeout",
              id: request.id,
              time: new Date().toISOString(),
            });
          this.#record({ state: "timed_out", request });
          withdrawn = `its time ran out at ${request.deadline}`;
          throw new ApprovalTimedOut(request);
        }
        if (this.#o.signal?.aborted) throw this.#o.signal.reason ?? new Error("aborted");
        if (!waited) {
          // Not decided yet: the run will wait. The caller stops what would run meanwhile.
          waited = true;
          await options.beforeWait?.();
        }
        await new Promise((r) =>
          setTimeout(r, Math.min(delay, Math.max(10, Date.parse(request.deadline) - Date.now()))),
        );
      }
    } finally {
      prompting.abort(new PromptWithdrawn(withdrawn));
      this.#onWaiting(undefined);
    }
  }

  /**
   * Files a request without waiting (a host asked for at run time: the run goes on meanwhile). A
   * request of the same content this run filed and has not taken up yet is returned instead of a
   * second one. Its decision is taken up with `takeUp`.
   */
  file(ask: AskRequest): ApprovalRequest {
    return this.#requestFor(ask, false);
  }

  /**
   * Where a request filed with `file` stands. A decision is written to the run's records (history,
   * audit tape) once, when first seen here (then `used`); past its deadline a pending request is
   * timed out (recorded; nothing waited, so nothing ends). Undefined for an unknown id.
   */
  takeUp(id: string): GateAnswer | { state: "pending" | "timed_out" | "withdrawn" } | undefined {
    const view = viewsOf(this.#o.runId, readApprovalLines(this.#file)).find((v) => v.request.id === id);
    if (!view) return undefined;
    const { request } = view;
    if (view.decision) {
      if (!view.used) {
        this.#record({
          state: view.decision.approved ? "approved" : "denied",
          request,
          decision: view.decision,
        });
        appendApprovalLine(this.#file, { type: "used", id, time: new Date().toISOString() });
      }
      return { approved: view.decision.approved, request, decision: view.decision };
    }
    if (view.state === "pending" && Date.now() >= Date.parse(request.deadline)) {
      appendApprovalLine(this.#file, { type: "timeout", id, time: new Date().toISOString() });
      this.#record({ state: "timed_out", request });
      return { state: "timed_out" };
    }
    return {
      state: view.state === "pending" ? "pending" : view.state === "withdrawn" ? "withdrawn" : "timed_out",
    };
  }

  /**
   * The run ended: requests nobody decided and the run no longer waits for (a resumed pass went
   * another way) are withdrawn, so `scifi approvals` does not list them.
   */
  withdrawPending(reason: string): void {
    for (const view of viewsOf(this.#o.runId, readApprovalLines(this.#file))) {
      if (view.state !== "pending") continue;
      appendApprovalLine(this.#file, {
        type: "withdrawn",
        id: view.request.id,
        time: new Date().toISOString(),
        reason,
      });
    }
  }

  #requestFor(ask: AskRequest, waits = true): ApprovalRequest {
    const base = baseId(ask);
    const views = viewsOf(this.#o.runId, readApprovalLines(this.#file));
    // A request of the same content the run has not used yet: the one it waited on before a restart.
    const open = views.find(
      (v) =>
        (v.request.id === base || v.request.id.startsWith(`${base}-`)) &&
        sameContent(v.request, ask) &&
        !v.used &&
        v.state !== "withdrawn" &&
        v.state !== "timed_out",
    );
    if (open) {
      // Asked again after a restart: the resumed run's history was cut back to its checkpoint, so
      // the request goes on its records again (the audit tape shows both askings).
      if (open.state === "pending") this.#record({ state: "requested", request: open.request });
      return open.request;
    }
    const same = views.filter((v) => v.request.id === base || v.request.id.startsWith(`${base}-`)).length;
    const now = new Date();
    const site = this.#o.siteRequired?.includes(ask.action) === true;
    const request: ApprovalRequest = {
      type: "request",
      id: same === 0 ? base : `${base}-${same + 1}`,
      action: ask.action,
      summary: ask.summary,
      why: site
        ? `the site policy requires approval for '${ask.action}'`
        : `the task's SAM asks for approval of '${ask.action}'`,
      detail: ask.detail,
      facts: ask.facts ?? {},
      iteration: this.#iteration(),
      time: now.toISOString(),
      deadline: new Date(
        now.getTime() + (this.#o.timeoutSec ?? DEFAULT_APPROVAL_TIMEOUT_SEC) * 1000,
      ).toISOString(),
      ...(waits ? {} : { waits: false as const }),
    };
    appendApprovalLine(this.#file, request);
    this.#record({ state: "requested", request });
    if (this.#o.onApproval) void runApprovalHook(this.#o.home, this.#o.onApproval, this.#o.runId, request);
    return request;
  }
}

/**
 * Whether a recorded request asks exactly this: the id's hash is short (a person types it), so two
 * texts can share it (a birthday search finds a pair in seconds); taking up a request after a
 * restart compares the text itself, never the id alone.
 */
function sameContent(request: ApprovalRequest, ask: AskRequest): boolean {
  return request.action === ask.action && request.summary === ask.summary && request.detail === ask.detail;
}

/** The stable part of a request id: the action and a hash of what is asked. */
function baseId(ask: AskRequest): string {
  const hash = sha256(`${ask.action}\n${ask.summary}\n${ask.detail}`).slice(0, 8);
  return `${ask.action}-${hash}`;
}

/** Characters of the detail the hook's variable holds at most (a mail, not the record). */
export const HOOK_DETAIL_MAX = 16_000;

/**
 * The detail as the hook gets it: control characters shown as escapes (visibleBlock), as every
 * terminal listing shows them, and cut at HOOK_DETAIL_MAX characters (never inside a code point)
 * with a last line that says so and where the whole text is: a mailed request that ends early
 * must not read as the whole script (a `curl | sh` past the cut).
 */
function hookDetail(runId: string, request: ApprovalRequest): { text: string; cut: boolean } {
  const shown = [...visibleBlock(request.detail)];
  if (shown.length <= HOOK_DETAIL_MAX) return { text: shown.join(""), cut: false };
  const left = shown.length - HOOK_DETAIL_MAX;
  const notice = `... ${left} more characters not shown (${shown.length} in all); the whole text: scifi approvals show ${runId} ${request.id}`;
  return { text: `${shown.slice(0, HOOK_DETAIL_MAX).join("")}\n${notice}`, cut: true };
}

export function approvalHookEnv(
  home: string,
  runId: string,
  request: ApprovalRequest,
): Record<string, string> {
  const detail = hookDetail(runId, request);
  return {
    SCIFI_HOME: home,
    SCIFI_RUN_ID: runId,
    SCIFI_RUN_DIR: runDir(home, runId),
    SCIFI_APPROVAL_ID: request.id,
    SCIFI_APPROVAL_ACTION: request.action,
    SCIFI_APPROVAL_SUMMARY: visible(request.summary),
    SCIFI_APPROVAL_WHY: visible(request.why),
    SCIFI_APPROVAL_DETAIL: detail.text,
    SCIFI_APPROVAL_DETAIL_TRUNCATED: detail.cut ? "1" : "0",
    SCIFI_APPROVAL_DEADLINE: request.deadline,
    SCIFI_APPROVE_COMMAND: `scifi approve ${runId} ${request.id}`,
    SCIFI_DENY_COMMAND: `scifi deny ${runId} ${request.id} --reason TEXT`,
  };
}

/** Runs the site's onApproval command; never throws (its output goes to runs/<id>/on-approval.log). */
export function runApprovalHook(
  home: string,
  command: string,
  runId: string,
  request: ApprovalRequest,
): Promise<number | null> {
  return runSiteHook({
    command,
    env: approvalHookEnv(home, runId, request),
    log: join(runDir(home, runId), "on-approval.log"),
    logMode: 0o600,
  });
}
