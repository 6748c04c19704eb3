// What `scifi status` shows: each daemon task's state with the live numbers of its current run
// (iteration, phase, cost from the run's checkpoint), and tasks placed on SLURM with `scifi submit`.

import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pendingApprovals, runApprovals } from "../approval/store.ts";
import { listSubmissions, placementStatus } from "../jobs/placement.ts";
import { homePaths, runDir, runFiles } from "../paths.ts";
import { isZombie, livePidOwner, pidAlive, readPidLock } from "../pid-lock.ts";
import { foldRow, LISTING_WIDTH, visible } from "../terminal-text.ts";
import { liveOwner } from "./lock.ts";
import { type Attempt, daemonPaths, lastAttempt, listTasks, type TaskState } from "./records.ts";
import { readRunState } from "./spend.ts";

export interface TaskRow {
  task: string;
  /** `interrupted`: the record says running, but its worker is gone (the daemon resumes it when it runs). */
  state: TaskState | "interrupted";
  name?: string;
  run?: string;
  attempts: number;
  iteration?: number;
  phase?: string;
  usd: number;
  ageSec: number;
  reason?: string;
  pid?: number;
  /** A task placed on SLURM (daemon placement `slurm`): its job and SLURM's last-seen state. */
  slurmJob?: string;
  slurmState?: string;
  /** Requests of the task's run a person has not decided yet (ids): the task shows `awaiting approval`. */
  awaiting?: string[];
}

export interface SubmittedRow {
  jobId: string;
  name: string;
  slurm: string;
  run?: string;
  outcome?: string;
}

/** A run outside the daemon (`scifi run` in a shell, a placed job) that waits for a person. */
export interface AwaitingRunRow {
  run: string;
  /** The pending request ids (`scifi approvals` shows their detail). */
  awaiting: string[];
  iteration?: number;
  phase?: string;
}

export interface StatusReport {
  daemon: { pid: number; inbox: string; since: string } | null;
  tasks: TaskRow[];
  submitted: SubmittedRow[];
  /** Runs that are not daemon tasks and have requests nobody decided yet. */
  awaitingRuns: AwaitingRunRow[];
  /** The latest runs started outside the daemon (`scifi run`), newest first. */
  runs: RunRow[];
}

/** A run outside the daemon: its outcome, or running (its lock held), or stopped without one. */
export interface RunRow {
  run: string;
  state: string;
  iteration: number;
  usd: number;
  reason?: string;
}

/** How many runs outside the daemon `scifi status` lists. */
const RECENT_RUNS = 10;

export function recentRunRows(home: string): RunRow[] {
  const daemonRuns = new Set<string>();
  for (const record of listTasks(home)) for (const a of record.attempts) if (a.runId) daemonRuns.add(a.runId);
  const dir = homePaths(home).runs;
  if (!existsSync(dir)) return [];
  const ids = readdirSync(dir, { withFileTypes: true })
    .filter(
      (e) => e.isDirectory() && !daemonRuns.has(e.name) && existsSync(runFiles(join(dir, e.name)).state),
    )
    // Run ids start with their start time (runner/run-id.ts): newest first by name.
    .map((e) => e.name)
    .sort()
    .reverse()
    .slice(0, RECENT_RUNS);
  return ids.flatMap((run) => {
    const state = readRunState(home, run);
    if (!state) return [];
    const live = livePidOwner(runFiles(runDir(home, run)).lock) !== undefined;
    const status = state.outcome?.status ?? (live ? "running" : "stopped (scifi run --resume)");
    return [
      {
        run,
        state: status,
        iteration: state.iteration,
        usd: state.spent.usd,
        ...(state.outcome?.reason ? { reason: state.outcome.reason } : {}),
      },
    ];
  });
}

export function taskRows(home: string, now = Date.now()): TaskRow[] {
  return listTasks(home).map((record) => {
    const attempt = lastAttempt(record);
    const run = attempt ? readRunState(home, attempt.runId) : undefined;
    // A running task's run, or a queued task's `run` request (the daemon asks before a worker starts).
    const waitingRun =
      record.state === "running"
        ? attempt?.runId
        : record.state === "queued" && !record.runApproval?.approved
          ? record.runApproval?.runId
          : undefined;
    const awaiting = waitingRun
      ? runApprovals(home, waitingRun)
          .filter((v) => v.state === "pending")
          .map((v) => v.request.id)
      : [];
    const interrupted = record.state === "running" && attempt !== undefined && !workerAlive(home, attempt);
    return {
      task: record.key,
      state: interrupted ? "interrupted" : record.state,
      ...(record.name ? { name: record.name } : {}),
      ...(awaiting.length > 0 && waitingRun
        ? { run: waitingRun }
        : attempt?.runId
          ? { run: attempt.runId }
          : {}),
      attempts: record.attempts.length,
      ...(run ? { iteration: run.iteration, phase: run.phase } : {}),
      usd: record.attempts.reduce((sum, a) => sum + (readRunState(home, a.runId)?.spent.usd ?? 0), 0),
      ageSec: Math.max(0, Math.round((now - Date.parse(record.queuedAt)) / 1000)),
      ...(interrupted
        ? {
            reason: `its worker${attempt?.pid ? ` (pid ${attempt.pid})` : ""} is gone; the daemon resumes run ${attempt?.runId} when it runs (scifi daemon)`,
          }
        : record.reason
          ? { reason: record.reason }
          : {}),
      ...(attempt?.pid ? { pid: attempt.pid } : {}),
      ...(attempt?.slurm?.jobId ? { slurmJob: attempt.slurm.jobId } : {}),
      ...(attempt?.slurm?.state ? { slurmState: attempt.slurm.state } : {}),
      ...(awaiting.length > 0 ? { awaiting } : {}),
    };
  });
}

/**
 * Whether a running attempt still has a process behind it: the run's lock held by a live process,
 * or (before the worker took the lock) its pid alive. A SLURM-placed attempt runs elsewhere: alive.
 */
function workerAlive(home: string, attempt: Attempt): boolean {
  if (attempt.slurm) return true;
  if (attempt.runId && livePidOwner(runFiles(runDir(home, attempt.runId)).lock)) return true;
  if (attempt.runId && readPidLock(runFiles(runDir(home, attempt.runId)).lock)) return false;
  return attempt.pid !== undefined && pidAlive(attempt.pid) && !isZombie(attempt.pid);
}

export async function statusReport(home: string): Promise<StatusReport> {
  const owner = liveOwner(daemonPaths(home).lock);
  return {
    daemon: owner ? { pid: owner.pid, inbox: owner.inbox, since: owner.startedAt } : null,
    tasks: taskRows(home),
    submitted: await submittedRows(home),
    awaitingRuns: awaitingRunRows(home),
    runs: recentRunRows(home),
  };
}

/** Pending requests of runs no daemon task owns (a `scifi run` waiting in a shell or unattended). */
export function awaitingRunRows(home: string): AwaitingRunRow[] {
  const daemonRuns = new Set<string>();
  for (const record of listTasks(home)) {
    for (const a of record.attempts) if (a.runId) daemonRuns.add(a.runId);
    if (record.runApproval) daemonRuns.add(record.runApproval.runId);
  }
  const byRun = new Map<string, string[]>();
  for (const view of pendingApprovals(home)) {
    if (daemonRuns.has(view.runId)) continue;
    byRun.set(view.runId, [...(byRun.get(view.runId) ?? []), view.request.id]);
  }
  return [...byRun].map(([run, awaiting]) => {
    const state = readRunState(home, run);
    return { run, awaiting, ...(state ? { iteration: state.iteration, phase: state.phase } : {}) };
  });
}

/** SLURM state for tasks placed with `scifi submit` (asks SLURM only when there are any). */
async function submittedRows(home: string): Promise<SubmittedRow[]> {
  const records = listSubmissions(home);
  if (records.length === 0) return [];
  const { SlurmClient } = await import("../jobs/slurm.ts");
  const slurm = new SlurmClient({ timeoutMs: 10_000 });
  return Promise.all(
    records.map(async (record) => {
      const status = await placementStatus(home, record, slurm);
      return {
        jobId: record.jobId,
        name: record.name,
        slurm: status.summary,
        ...(status.run ? { run: status.run.runId } : {}),
        ...(status.run?.outcome ? { outcome: status.run.outcome.status } : {}),
      };
    }),
  );
}

export function renderStatus(report: StatusReport): string {
  const lines: string[] = [];
  lines.push(
    report.daemon
      ? `daemon: pid ${report.daemon.pid}, inbox ${visible(report.daemon.inbox)}, since ${visible(report.daemon.since)}`
      : "daemon: not running (start it with 'scifi daemon')",
  );
  const header = ["TASK", "STATE", "ITER", "USD", "AGE", "RUN / REASON"];
  const rows = report.tasks.map((t) => [
    t.task,
    t.awaiting ? "awaiting approval" : t.state,
    t.iteration === undefined ? "-" : String(t.iteration),
    t.usd.toFixed(4),
    age(t.ageSec),
    runOrReason(t),
  ]);
  if (rows.length) lines.push(...table([header, ...rows]));
  else lines.push("no daemon tasks yet: drop a SAM into the inbox (docs/daemon.md)");
  if (report.runs.length) {
    lines.push("", `runs outside the daemon (scifi run), latest ${RECENT_RUNS} at most:`);
    lines.push(
      ...table([
        ["RUN", "STATE", "ITER", "USD", "REASON"],
        ...report.runs.map((r) => [
          r.run,
          r.state,
          String(r.iteration),
          r.usd.toFixed(4),
          short(r.reason ?? ""),
        ]),
      ]),
    );
  }
  if (report.awaitingRuns.length) {
    lines.push("", "runs outside the daemon awaiting approval (scifi approvals):");
    lines.push(
      ...table([
        ["RUN", "STATE", "ITER", "REQUESTS"],
        ...report.awaitingRuns.map((r) => [
          r.run,
          "awaiting approval",
          r.iteration === undefined ? "-" : String(r.iteration),
          r.awaiting.join(", "),
        ]),
      ]),
    );
  }
  if (report.submitted.length) {
    lines.push("", "submitted to SLURM:");
    lines.push(
      ...table([
        ["JOB", "NAME", "STATE", "RUN"],
        ...report.submitted.map((s) => [s.jobId, s.name, s.slurm, s.run ?? "-"]),
      ]),
    );
  }
  return `${lines.join("\n")}\n`;
}

function runOrReason(t: TaskRow): string {
  if (t.awaiting) return `${t.run ?? ""} ${t.awaiting.join(", ")} (scifi approvals)`.trim();
  const job = t.slurmJob ? `job ${t.slurmJob} ${t.slurmState ?? "SUBMITTED"}` : "";
  if (t.state === "running" || t.state === "passed") return [job, t.run].filter(Boolean).join(" ");
  return t.reason ?? [job, t.run].filter(Boolean).join(" ");
}

/**
 * Every cell made visible first (a task name, a reason an agent shaped): one cell, one line. A row
 * wider than LISTING_WIDTH is folded there, its further rows marked `  + `: a terminal never
 * soft-wraps the agent's words (padded with blanks to its width) into a row of their own that reads
 * as another task's.
 */
function table(cells: string[][]): string[] {
  const rows = cells.map((r) => r.map(visible));
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows.flatMap((r) =>
    foldRow(
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
      { first: "", continuation: "  + ", width: LISTING_WIDTH },
    ),
  );
}

function age(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return `${Math.round(seconds / 3600)}h`;
}

/** A reason on one table line: its first line, at most 100 characters (the report has it whole). */
function short(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}
