// SLURM jobs for one `scifi run`: builds the task's broker and job tools when the SAM asks for
// `jobs: slurm`, and cancels the task's jobs when the run ends, fails or is cancelled.
// The run's setup (runner/run/setup.ts) plugs `jobsExtension` into the run's dependencies; this
// module never imports the loop (test/imports.test.ts keeps it so).
import { spawnSync } from "node:child_process";
import { appendFileSync, mkdirSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ApprovalGate } from "../approval/gate.ts";
import type { IntegrityNotice, RunExtension } from "../extension/run-extension.ts";
import type { HistoryEvent } from "../memory/history-events.ts";
import { runDir } from "../paths.ts";
import { PolicyRefused } from "../policy/refused.ts";
import { loadSitePolicy, type SitePolicy } from "../policy/site.ts";
import type { SamDocument, SamMetadata } from "../sam/types.ts";
import { sifFileName } from "../sandbox/apptainer.ts";
import { trackLive } from "../sandbox/live.ts";
import { shellQuote, shellWords } from "../terminal-text.ts";
import type { Tool } from "../tools/tool.ts";
import { type JobSandbox, jobBinds } from "./batch-script.ts";
import {
  type JobApprovalFacts,
  JobBroker,
  type JobEvent,
  type JobEventSink,
  type WaitHooks,
} from "./broker.ts";
import { type JobsPolicy, loadJobsPolicy } from "./policy.ts";
import { jobTools } from "./tools.ts";

export interface RunJobs {
  /** The job tools to add to the work agent's set (empty unless the task is granted jobs). */
  tools: Tool[];
  broker?: JobBroker;
  /** Cancels the task's live jobs (unless the SAM keeps them). Safe to call twice. */
  finish(reason: string): Promise<void>;
  /**
   * Cancels every live job of the task, `keep_jobs` or not (their outputs stay), and waits for SLURM
   * to list none as live; returns the ids still live after the bound.
   */
  endJobs(reason: string, onCancelled?: (jobIds: readonly string[]) => void): Promise<string[]>;
  /** Best-effort synchronous `scancel` for the process 'exit' event. */
  finishSync(): void;
}

export interface JobsForRunOptions {
  home: string;
  runId: string;
  sam: SamDocument;
  /** Site policy file holding the `jobs:` section (default `<home>/site-policy.yaml`). */
  sitePolicyFile: string;
  /** Also told of every broker call (they are always recorded in `runs/<runId>/jobs/events.jsonl`). */
  onEvent?: JobEventSink;
  /** A resumed run: take over the jobs it had submitted before. */
  resume?: boolean;
  /** The run's approval gate: with `submit_job` required, every submission waits for a person. */
  approvals?: ApprovalGate;
}

/**
 * A job without a container (site `jobs.sandbox: none`) runs on the node as the user, with the
 * node's own `sbatch`, `srun` and `scancel` at hand: what it starts that way is outside the run's
 * broker. A `submit_job` or `delete` approval could then not bind the jobs (trust.md rule 7: a key
 * either works or is an error), so such a run is refused before it starts. `network` binds already:
 * under a pending or denied request a submission is refused (broker.ts #jobSandbox).
 */
export function refuseUnboundApprovals(
  sandbox: JobSandbox,
  approvals: Pick<ApprovalGate, "requires"> | undefined,
): void {
  if (sandbox.engine !== "none") return;
  const unbound = (["submit_job", "delete"] as const).filter((a) => approvals?.requires(a));
  if (unbound.length === 0) return;
  const why = {
    submit_job: "a job could submit further jobs without a person's yes",
    delete:
      "a job's own jobs would outlive the run's end of jobs and could remove or rewrite start files after they were compared",
  };
  throw new PolicyRefused(
    "jobs-approval-unbound",
    "jobs.sandbox",
    `this task requires approval of ${unbound.join(" and ")}, and the site runs agent jobs without a container (jobs.sandbox: none), where a job script can call the node's own sbatch, outside the run's job broker: ${unbound.map((a) => why[a]).join("; ")}`,
    "Set jobs.sandbox to auto, docker or apptainer in the site policy (a job's container has no SLURM client or munge socket), or drop `jobs: slurm` from the SAM",
  );
}

/** The container agent jobs run in: the task's image and network grant, per the jobs policy. */
export function jobSandboxFor(sam: SamDocument, policy: JobsPolicy, site: SitePolicy): JobSandbox {
  if (policy.sandbox === "none") return { engine: "none" };
  const image = sam.metadata.image ?? site.defaultImage;
  const sifDir = policy.sifDir ?? process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif";
  return {
    engine: policy.sandbox,
    image,
    sif: image.endsWith(".sif") && image.startsWith("/") ? image : join(sifDir, sifFileName(image)),
    network: sam.metadata.network && site.allowNetwork,
    ...(site.apptainerHostNetwork ? { apptainerHostNetwork: true } : {}),
    ...(site.allowedPrivateRanges.length ? { allowedPrivateRanges: [...site.allowedPrivateRanges] } : {}),
    rootUser: site.sandboxUser,
  };
}

/**
 * What network an agent job has, in words for the agent (submit_job's result) and the user (`scifi
 * plan`). A host list is the work sandbox's alone: its proxy lives in the run's process, which a job
 * on a compute node cannot reach, so a job of such a task has no network, and is told so.
 */
export function jobNetworkNote(
  sam: Pick<SamMetadata, "network" | "networkHosts">,
  sandbox: JobSandbox,
): string {
  if (sandbox.engine === "none")
    return "jobs run without a container on this site (jobs.sandbox: none): a job has whatever network its node has";
  if (sandbox.network)
    return sandbox.apptainerHostNetwork
      ? "a job has network (network: true): with Docker a bridge network of its own, removed when it ends; with Apptainer the node's network (site apptainerHostNetwork)"
      : "a job has network (network: true) with Docker only (a bridge network of its own, removed when it ends); with Apptainer it has none, since an unprivileged job cannot get a network of its own and the site does not give it the node's (apptainerHostNetwork)";
  if (sam.networkHosts?.length)
    return `a job has no network: the task's host list (${sam.networkHosts.join(", ")}) is reachable only from the work sandbox, through the run's proxy. Fetch the data there, into the task folder, and let the job read it from /task`;
  return "a job has no network";
}

/** How long the checks wait for the agent's cancelled jobs to be gone before the run fails closed. */
const END_JOBS_WAIT_MS = 60_000;

export function jobsForRun(o: JobsForRunOptions): RunJobs {
  if (o.sam.metadata.jobs !== "slurm")
    return { tools: [], finish: async () => {}, endJobs: async () => [], finishSync: () => {} };
  const recordsDir = join(runDir(o.home, o.runId), "jobs");
  const policy = loadJobsPolicy(o.sitePolicyFile);
  const site = loadSitePolicy(o.sitePolicyFile, false).policy;
  const sandbox = jobSandboxFor(o.sam, policy, site);
  refuseUnboundApprovals(sandbox, o.approvals);
  const taskDir = realpathSync(dirname(o.sam.file));
  // A folder no job container could bind as one path: refused before the run starts, not at its
  // first submission (after the person approved it).
  if (sandbox.engine !== "none") jobBinds(taskDir, join(recordsDir, "scripts", "job.sh"));
  const broker = new JobBroker({
    runId: o.runId,
    taskDir,
    sam: o.sam.metadata,
    policy,
    sandbox,
    restore: o.resume === true,
    recordsDir,
    onEvent: withRecord(join(recordsDir, "events.jsonl"), o.onEvent),
    ...(o.approvals?.requires("submit_job") ? { approve: submitApproval(o.approvals) } : {}),
    // A denied or pending network request binds the jobs too (docs/approval.md).
    ...(o.approvals?.requires("network") && (o.sam.metadata.network || o.sam.metadata.networkHosts?.length)
      ? { networkApproved: () => o.approvals?.runWideApproved("network") === true }
      : {}),
  });
  let finished = false;
  // How many jobs there were when the last endJobs left none live: with no job since, nothing to end.
  let endedAt = 0;
  return {
    // With a host list the agent reads, at each submission, that the job has no network.
    tools: jobTools(
      broker,
      o.sam.metadata.networkHosts?.length ? jobNetworkNote(o.sam.metadata, sandbox) : undefined,
    ),
    broker,
    async endJobs(reason, onCancelled) {
      const count = broker.jobIds.length;
      if (count === endedAt) return [];
      const { stillLive, cancelled } = await broker.cancelAll(reason, END_JOBS_WAIT_MS, { evenKept: true });
      if (cancelled.length > 0) onCancelled?.(cancelled);
      if (stillLive.length === 0) endedAt = count;
      return stillLive;
    },
    async finish(reason) {
      if (finished || broker.jobIds.length === endedAt) return;
      finished = true;
      await broker.cancelAll(reason);
    },
    finishSync() {
      if (finished || broker.jobIds.length === 0 || o.sam.metadata.keepJobs) return;
      finished = true;
      spawnSync("scancel", broker.jobIds, {
        stdio: "ignore",
        timeout: 10_000,
        env: { PATH: process.env.PATH },
      });
    },
  };
}

/** An append-only JSONL sink, one broker call a line (records live out of the agent's reach). */
/** The record file first, then the caller's sink. */
function withRecord(file: string, also: JobEventSink | undefined): JobEventSink {
  const record = appendEvents(file);
  return also
    ? (event) => {
        record(event);
        also(event);
      }
    : record;
}

export function appendEvents(file: string): JobEventSink {
  return (event: JobEvent) => {
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, `${JSON.stringify(event)}\n`);
  };
}

/**
 * The run extension of a `jobs: slurm` SAM (undefined for any other): the job tools are offered to
 * the work agent, every broker decision goes onto the history tape once the loop has opened it, and
 * every job the agent started is cancelled when the run returns or throws (`keep_jobs: true` keeps
 * them), or when SIGINT/SIGTERM end the process.
 */
export function jobsExtension(o: Omit<JobsForRunOptions, "onEvent">): RunExtension | undefined {
  if (o.sam.metadata.jobs !== "slurm") return undefined;
  // Every broker decision is recorded in the run's jobs/events.jsonl in full (jobsForRun) and, once
  // the loop has opened it, goes onto the history tape as one line.
  let toHistory: ((event: HistoryEvent) => void) | undefined;
  let integrity: ((notice: IntegrityNotice) => void) | undefined;
  const jobs = jobsForRun({ ...o, onEvent: (event) => toHistory?.(historyEventOf(event)) });
  // SIGINT/SIGTERM end the process through the live registry's signal policy (sandbox/live.ts) (a
  // `finally` never runs then): register the jobs there too, so a cancelled task cancels its jobs.
  const untrack = trackLive({
    runId: `${o.runId}-slurm-jobs`,
    stop: () => jobs.finish("scifi was interrupted"),
    stopSync: () => jobs.finishSync(),
  });
  return {
    tools: jobs.tools,
    onHistory: (append) => {
      toHistory = append;
    },
    onIntegrity: (record) => {
      integrity = record;
    },
    endAgentWork: (reason) => jobs.endJobs(reason, (ids) => integrity?.(cancelledJobs(ids, reason))),
    async end() {
      untrack();
      await jobs.finish("the task's run ended");
    },
  };
}

/** Jobs of the agent still running when its work ended, cancelled by the runner. */
function cancelledJobs(ids: readonly string[], reason: string): IntegrityNotice {
  return {
    kind: "job_after_work",
    attempted: `SLURM job(s) ${ids.join(", ")} still running after the work pass`,
    rule: "a phase ends everything of the agent's, SLURM jobs included (trust.md rule 1)",
    action: `cancelled (${reason})`,
  };
}

/**
 * What a person reads of a submission: arguments shell-quoted, so a newline or an ESC in one shows
 * as `$'...\n...'` and never as a line of its own (the listing escapes the rest).
 */
export function submitRequestText(
  job: Pick<JobApprovalFacts, "script" | "args" | "name" | "sha256" | "text">,
  resources: string,
): { summary: string; detail: string } {
  return {
    summary: `submit ${shellWords([job.script, ...job.args])} as job ${shellQuote(job.name)} (${resources})`,
    detail: `# ${shellQuote(job.script)} (sha256 ${job.sha256})\n# args: ${job.args.length ? shellWords(job.args) : "(none)"}\n# ${resources}\n${job.text}`,
  };
}

/** Asks the gate before sbatch: the frozen script in full, the resources on one line. */
function submitApproval(
  gate: ApprovalGate,
): (job: JobApprovalFacts, wait?: WaitHooks) => Promise<string | undefined> {
  return async (job, wait) => {
    let stopped = false;
    const stop = async () => {
      stopped = true;
      await wait?.suspend();
    };
    const r = job.resources;
    const resources = `time ${Math.ceil(r.timeSec / 60)} min, ${r.cpus} CPU(s), ${Math.ceil(r.memoryBytes / 1024 ** 2)} MiB, ${r.gpus} GPU(s)`;
    const answer = await gate.ask(
      {
        action: "submit_job",
        ...submitRequestText(job, resources),
        facts: { script: job.script, sha256: job.sha256, resources, name: job.name },
      },
      { beforeWait: stop },
    );
    // The job's container writes to the task folder as the sandbox user: the fresh work sandbox
    // must be up (the folder lent) before sbatch. A denial leaves it to the agent's next command.
    if (stopped && answer.approved) await wait?.resume();
    if (answer.approved) return undefined;
    const d = answer.decision;
    const sandbox =
      stopped && wait
        ? " While waiting, the sandbox was stopped; a fresh one starts with your next command (/tmp and background processes are gone, the task folder is as it was)."
        : "";
    return `a person (${d.who}) denied approval at ${d.time}: ${d.note ?? "no reason given"}. Take another way.${sandbox}`;
  };
}

/** The one-line history form of a broker decision. */
export function historyEventOf(event: JobEvent): HistoryEvent {
  const jobId = event.request.jobId ?? event.result?.jobId;
  return {
    type: "job",
    action: event.action,
    decision: event.decision,
    ...(jobId !== undefined ? { jobId: String(jobId) } : {}),
    ...(event.rule ? { rule: event.rule } : {}),
    ...(event.message ? { message: event.message } : {}),
  };
}
