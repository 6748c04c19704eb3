// Approval records of one run: `runs/<id>/approvals.jsonl`, in the run folder that no sandbox ever
// mounts, private to the user (0600), append-only, one JSON object a line. The run appends requests
// (and a `timeout` when it gives up waiting); `scifi approve` / `scifi deny` append decisions. A
// request is decided at most once; the first decision line wins.
import { appendFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { homePaths, runDir } from "../paths.ts";
import type { ApprovalAction } from "../sam/approval-actions.ts";

export const APPROVALS_FILE = "approvals.jsonl";

export interface ApprovalRequest {
  type: "request";
  /** Stable within the run: the action and a hash of what is asked (a repeat gets `-2`, `-3`...). */
  id: string;
  action: ApprovalAction;
  /** One line: what would happen. */
  summary: string;
  /** Why the runner asks (which rule: the SAM or the site policy). */
  why: string;
  /** The exact command, job script or file list, shown to the person deciding. */
  detail: string;
  /** Facts for the onApproval hook and `--json` (strings only). */
  facts: Record<string, string>;
  iteration: number;
  time: string;
  /** When the run stops waiting and ends blocked. */
  deadline: string;
  /**
   * `false`: the run does not wait for this request and goes on (a host asked for at run time,
   * runner/run/gates/approve-hosts.ts); past its deadline it is timed out and nothing ends. Absent: the
   * run waits.
   */
  waits?: false;
}

export interface ApprovalDecision {
  type: "decision";
  id: string;
  approved: boolean;
  /** The OS user who decided. */
  who: string;
  time: string;
  /** `--note` of an approval, `--reason` of a denial. */
  note?: string;
}

export interface ApprovalTimeout {
  type: "timeout";
  id: string;
  time: string;
}

/** The run took the decision into its records (history, audit tape) and went on. */
export interface ApprovalUsed {
  type: "used";
  id: string;
  time: string;
}

/** The run ended without taking the request up (it went another way after a restart, or stopped). */
export interface ApprovalWithdrawn {
  type: "withdrawn";
  id: string;
  time: string;
  reason: string;
}

export type ApprovalLine =
  | ApprovalRequest
  | ApprovalDecision
  | ApprovalTimeout
  | ApprovalUsed
  | ApprovalWithdrawn;

export type ApprovalState = "pending" | "approved" | "denied" | "timed_out" | "withdrawn";

export interface ApprovalView {
  runId: string;
  request: ApprovalRequest;
  state: ApprovalState;
  decision?: ApprovalDecision;
  timedOutAt?: string;
  used: boolean;
}

export function approvalsFile(home: string, runId: string): string {
  return join(runDir(home, runId), APPROVALS_FILE);
}

export function readApprovalLines(file: string): ApprovalLine[] {
  if (!existsSync(file)) return [];
  const lines: ApprovalLine[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try {
      lines.push(JSON.parse(line) as ApprovalLine);
    } catch {
      // A torn last line (a writer killed mid-append) is ignored; whole lines stay valid.
    }
  }
  return lines;
}

export function appendApprovalLine(file: string, line: ApprovalLine): void {
  appendFileSync(file, `${JSON.stringify(line)}\n`, { mode: 0o600 });
}

/** Every request of one run with its state, in request order. */
export function runApprovals(home: string, runId: string): ApprovalView[] {
  return viewsOf(runId, readApprovalLines(approvalsFile(home, runId)));
}

export function viewsOf(runId: string, lines: readonly ApprovalLine[]): ApprovalView[] {
  const views = new Map<string, ApprovalView>();
  for (const line of lines) {
    if (line.type === "request") {
      if (!views.has(line.id)) views.set(line.id, { runId, request: line, state: "pending", used: false });
      continue;
    }
    const view = views.get(line.id);
    if (!view) continue;
    if (line.type === "decision" && view.state === "pending") {
      view.decision = line;
      view.state = line.approved ? "approved" : "denied";
    } else if (line.type === "timeout" && view.state === "pending") {
      view.state = "timed_out";
      view.timedOutAt = line.time;
    } else if (line.type === "withdrawn" && view.state === "pending") {
      view.state = "withdrawn";
    } else if (line.type === "used") {
      view.used = true;
    }
  }
  return [...views.values()];
}

/** Pending requests of every run under the home, oldest first. */
export function pendingApprovals(home: string): ApprovalView[] {
  const runs = homePaths(home).runs;
  if (!existsSync(runs)) return [];
  const pending: ApprovalView[] = [];
  for (const runId of readdirSync(runs).sort()) {
    if (!existsSync(approvalsFile(home, runId))) continue;
    pending.push(...runApprovals(home, runId).filter((v) => v.state === "pending"));
  }
  return pending.sort((a, b) => a.request.time.localeCompare(b.request.time));
}

export class ApprovalNotPending extends Error {
  override name = "ApprovalNotPending";
}

/** Records a person's decision; refuses an unknown request or one already decided or timed out. */
export function decide(
  home: string,
  runId: string,
  id: string,
  approved: boolean,
  note: string | undefined,
  who: string = osUser(),
): ApprovalDecision {
  const file = approvalsFile(home, runId);
  const views = runApprovals(home, runId);
  const view = views.find((v) => v.request.id === id);
  if (!view) {
    const known = views.filter((v) => v.state === "pending").map((v) => v.request.id);
    throw new ApprovalNotPending(
      `run ${runId} has no approval request '${id}'${known.length ? `; pending: ${known.join(", ")}` : ""}`,
    );
  }
  if (view.state !== "pending") {
    const by = view.decision ? ` by ${view.decision.who} at ${view.decision.time}` : "";
    throw new ApprovalNotPending(
      `request ${id} of run ${runId} is already ${view.state.replace("_", " ")}${by}`,
    );
  }
  const decision: ApprovalDecision = {
    type: "decision",
    id,
    approved,
    who,
    time: new Date().toISOString(),
    ...(note ? { note } : {}),
  };
  appendApprovalLine(file, decision);
  return decision;
}

export function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? "?"}`;
  }
}
