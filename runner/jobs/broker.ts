// The host-side job broker of one task run. The agent never gets a SLURM client or the munge socket:
// its tools call this broker, which validates every request against the task's grant, submits with
// sbatch, answers only for the task's own jobs, and reports every call to an event sink (the run's
// history tape). `cancelAll()` ends the task's jobs when the task ends, fails or is cancelled.
// One class over 500 lines on purpose: every method is one broker decision and its record, side by side.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { constants, type FileHandle, lstat, mkdir, open, realpath, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { writeJsonAtomic } from "../atomic-write.ts";
import { HostPathRefused } from "../policy/host-path-refused.ts";
import { writeTaskFile } from "../policy/host-paths.ts";
import type { SamMetadata } from "../sam/types.ts";
import { sha256 } from "../sha256.ts";
import { agentJobArgs, findSbatchDirectives, type JobSandbox, renderAgentJobScript } from "./batch-script.ts";
import { JobRefused } from "./errors.ts";
import { describeGrant, type JobGrant, type JobsPolicy, jobGrant } from "./policy.ts";
import {
  jobName,
  readScript,
  type SubmitRequest,
  toHostPath,
  type ValidResources,
  validateResources,
} from "./requests.ts";
import { LIVE_STATES, SlurmClient, type SlurmJobInfo } from "./slurm.ts";
import { describeBytes, formatSlurmTime } from "./units.ts";

export type { SubmitRequest } from "./requests.ts";

/**
 * Folder in the task folder where the agent finds copies of its jobs' stdout/stderr files. SLURM
 * itself writes them in the run folder (`jobs/out/`), which no sandbox mounts: slurmstepd opens an
 * output path as the job's user (root for a root runner) and follows links, so a path the agent can
 * write (and plant `slurm-out/b-<next id>.out -> /etc/cron.d/x` at) would let a job write anywhere.
 */
export const JOB_OUTPUT_DIR = "slurm-out";
/** The copies in the task folder hold at most this much of each output (the end is kept). */
const MIRROR_CAP_BYTES = 64 * 1024 ** 2;

export interface SubmittedJob {
  jobId: string;
  name: string;
  /** Task-relative paths of the job's output files. */
  stdout: string;
  stderr: string;
  time: string;
  cpus: number;
  memory: string;
  gpus: number;
  /** `#SBATCH` lines found in the script: ignored, resources come from the request. */
  ignoredDirectives: string[];
}

export interface JobOutput {
  jobId: string;
  stream: "stdout" | "stderr";
  text: string;
  /** Size of the whole file; `truncated` when `text` holds only its last `outputCapBytes`. */
  sizeBytes: number;
  truncated: boolean;
}

/** One broker call as it goes on the history tape: what was asked, what was decided, what came of it. */
export interface JobEvent {
  type: "job";
  action: "submit" | "status" | "cancel" | "output" | "cancel_all";
  at: string;
  runId: string;
  request: Record<string, unknown>;
  decision: "allowed" | "refused" | "failed";
  rule?: string;
  message?: string;
  result?: Record<string, unknown>;
}

export type JobEventSink = (event: JobEvent) => void;

/** The broker's record of a job it submitted (also written to `<recordsDir>/jobs.json`). */
interface JobRecord {
  jobId: string;
  name: string;
  script: string;
  scriptSha256: string;
  args: string[];
  stdoutPath: string;
  stderrPath: string;
  submittedAt: string;
  lastState?: string;
}

export interface JobBrokerOptions {
  runId: string;
  /** Host task folder. */
  taskDir: string;
  sam: SamMetadata;
  policy: JobsPolicy;
  /** A folder out of the agent's reach (the run folder's `jobs/`): script copies, job records. */
  recordsDir: string;
  /** Where job scripts run on the node: the task's container, or (site's choice) directly. */
  sandbox: JobSandbox;
  onEvent?: JobEventSink;
  slurm?: SlurmClient;
  /** Take over the jobs recorded in `<recordsDir>/jobs.json` (a resumed run keeps owning them). */
  restore?: boolean;
  /**
   * A person's approval (SAM or site `approval: [submit_job]`): called with the frozen script and
   * the resources before sbatch; resolves to undefined when approved, or the denial's text.
   */
  approve?: (job: JobApprovalFacts, wait?: WaitHooks) => Promise<string | undefined>;
  /**
   * `approval: [network]` (SAM or site): whether a person's decision lets a job have network now;
   * undefined: no such approval is required. False while the run's network request is pending or
   * denied: the job then gets none (a job never has more than the work sandbox), and on a site that
   * runs jobs without a container (no network of its own to take away) the submission is refused.
   */
  networkApproved?: () => boolean;
}

/**
 * What the caller does around a wait for a person: `suspend` stops its sandbox before, `resume`
 * starts a fresh one after (before sbatch: the job needs the task folder lent as while it runs).
 */
export interface WaitHooks {
  suspend(): Promise<void>;
  resume(): Promise<void>;
}

/** What a person sees before an agent job is submitted. */
export interface JobApprovalFacts {
  script: string;
  text: string;
  sha256: string;
  name: string;
  args: string[];
  resources: ValidResources;
}

export class JobBroker {
  readonly runId: string;
  readonly #taskDir: string;
  readonly #sam: SamMetadata;
  readonly #grant: JobGrant | JobRefused;
  readonly #recordsDir: string;
  readonly #sandbox: JobSandbox;
  readonly #onEvent: JobEventSink;
  readonly #slurm: SlurmClient;
  readonly #approve: JobBrokerOptions["approve"];
  readonly #networkApproved: JobBrokerOptions["networkApproved"];
  readonly #jobs = new Map<string, JobRecord>();
  /** Serialises submissions so two concurrent calls cannot both pass the job caps. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: JobBrokerOptions) {
    this.runId = options.runId;
    this.#taskDir = resolve(options.taskDir);
    this.#sam = options.sam;
    this.#grant = jobGrant(options.sam, options.policy);
    this.#recordsDir = options.recordsDir;
    this.#sandbox = options.sandbox;
    this.#networkApproved = options.networkApproved;
    this.#onEvent = options.onEvent ?? (() => {});
    this.#slurm = options.slurm ?? new SlurmClient();
    this.#approve = options.approve;
    if (options.restore) this.#restoreRecords();
  }

  #restoreRecords(): void {
    const file = join(this.#recordsDir, "jobs.json");
    if (!existsSync(file)) return;
    const doc = JSON.parse(readFileSync(file, "utf8")) as { jobs?: JobRecord[] };
    for (const record of doc.jobs ?? []) this.#jobs.set(record.jobId, record);
  }

  /** True when the task may use jobs: the job tools are offered only then. */
  get granted(): boolean {
    return !(this.#grant instanceof JobRefused);
  }

  /** The grant, or the refusal explaining why there is none. */
  get grant(): JobGrant | JobRefused {
    return this.#grant;
  }

  /** Ids of the jobs this task submitted, oldest first. */
  get jobIds(): string[] {
    return [...this.#jobs.keys()];
  }

  /** `wait`: what the caller does when the submission waits for a person (runner/approval). */
  submit(request: SubmitRequest, wait?: WaitHooks): Promise<SubmittedJob> {
    const run = this.#queue.then(() =>
      this.#record("submit", { ...request }, async () => {
        const grant = this.#requireGrant();
        const resources = validateResources(request, grant);
        const script = await this.#resolveScript(request.script);
        await this.#checkCaps(grant);
        return this.#submitValidated(request, grant, resources, script, wait);
      }),
    );
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * The job's state. With `waitMs`, waits host-side (0.5 s, doubling to 10 s between queries) until
   * the job leaves the live states or the time is up; one event on the tape either way.
   */
  status(jobId: string, waitMs = 0, signal?: AbortSignal): Promise<SlurmJobInfo> {
    return this.#record("status", waitMs > 0 ? { jobId, waitMs } : { jobId }, async () => {
      const record = this.#owned(jobId);
      const deadline = Date.now() + waitMs;
      let delay = 500;
      for (;;) {
        const info = await this.#currentState(record);
        if (!LIVE_STATES.has(info.state) || Date.now() + delay > deadline || signal?.aborted) return info;
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 10_000);
      }
    });
  }

  async #currentState(record: JobRecord): Promise<SlurmJobInfo> {
    await this.#mirror(record);
    const info = await this.#slurm.jobInfo(record.jobId);
    if (!info) return { jobId: record.jobId, state: record.lastState ?? "UNKNOWN", source: "sacct" };
    record.lastState = info.state;
    // Host paths are not the agent's business: it reads output through job_output.
    const { stdout: _o, stderr: _e, ...visible } = info;
    return visible;
  }

  cancel(jobId: string): Promise<{ jobId: string; cancelled: boolean; state: string }> {
    return this.#record("cancel", { jobId }, async () => {
      const record = this.#owned(jobId);
      const live = (await this.#slurm.squeue([record.jobId])).get(record.jobId);
      if (!live || !LIVE_STATES.has(live.state)) {
        return { jobId: record.jobId, cancelled: false, state: live?.state ?? record.lastState ?? "ENDED" };
      }
      await this.#slurm.scancel([record.jobId]);
      record.lastState = "CANCELLED";
      return { jobId: record.jobId, cancelled: true, state: "CANCELLED" };
    });
  }

  output(jobId: string, stream: "stdout" | "stderr" = "stdout"): Promise<JobOutput> {
    return this.#record("output", { jobId, stream }, async () => {
      const grant = this.#requireGrant();
      const record = this.#owned(jobId);
      const path = stream === "stdout" ? record.stdoutPath : record.stderrPath;
      await this.#mirror(record);
      return { jobId: record.jobId, stream, ...(await this.#readOutput(path, grant.outputCapBytes)) };
    });
  }

  /**
   * Cancels every live job of the task (unless the SAM says `keep_jobs`) and waits up to `waitMs`
   * for SLURM to list none of them as live. Returns the ids it cancelled.
   */
  cancelAll(
    reason: string,
    waitMs = 15_000,
    options: { evenKept?: boolean } = {},
  ): Promise<{ cancelled: string[]; kept: boolean; stillLive: string[] }> {
    return this.#record("cancel_all", { reason }, async () => {
      if (this.#sam.keepJobs && !options.evenKept) return { cancelled: [], kept: true, stillLive: [] };
      const ids = this.jobIds;
      const live = [...(await this.#slurm.squeue(ids)).values()].filter((j) => LIVE_STATES.has(j.state));
      const cancelled = live.map((j) => j.jobId);
      await this.#slurm.scancel(cancelled);
      const deadline = Date.now() + waitMs;
      let stillLive: string[] = cancelled;
      while (stillLive.length > 0) {
        stillLive = [...(await this.#slurm.squeue(cancelled)).values()]
          .filter((j) => LIVE_STATES.has(j.state))
          .map((j) => j.jobId);
        if (stillLive.length === 0 || Date.now() >= deadline) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      for (const id of cancelled) {
        const record = this.#jobs.get(id);
        if (record) record.lastState = "CANCELLED";
      }
      // What the ended jobs wrote, copied into the task folder before any check reads it.
      for (const record of this.#jobs.values()) await this.#mirror(record);
      await this.#saveRecords();
      return { cancelled, kept: false, stillLive };
    });
  }

  /** Runs one broker action and reports it to the sink, whatever its outcome. */
  async #record<T>(
    action: JobEvent["action"],
    request: Record<string, unknown>,
    body: () => Promise<T>,
  ): Promise<T> {
    const at = new Date().toISOString();
    try {
      const result = await body();
      this.#onEvent({
        type: "job",
        action,
        at,
        runId: this.runId,
        request,
        decision: "allowed",
        result: toRecord(result),
      });
      return result;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const refused = error instanceof JobRefused;
      this.#onEvent({
        type: "job",
        action,
        at,
        runId: this.runId,
        request,
        decision: refused ? "refused" : "failed",
        rule: refused ? error.rule : undefined,
        message,
      });
      throw error;
    }
  }

  #requireGrant(): JobGrant {
    if (this.#grant instanceof JobRefused) throw this.#grant;
    return this.#grant;
  }

  /** The task's own job by id, or by the name given at submit (its latest job of that name). */
  #owned(jobId: string): JobRecord {
    this.#requireGrant();
    const key = String(jobId).trim();
    const record = /^\d+$/.test(key)
      ? this.#jobs.get(key)
      : [...this.#jobs.values()].filter((r) => r.name === key).at(-1);
    if (!record) {
      const own = this.jobIds;
      throw new JobRefused(
        "unknown-job",
        `job ${jobId}`,
        `this task started ${own.length === 0 ? "no jobs" : `only job(s) ${own.join(", ")}`}`,
        "A task may query, cancel or read only the jobs it submitted",
      );
    }
    return record;
  }

  /** The script's real path: inside the task folder after resolving symlinks, a regular file. */
  async #resolveScript(requested: string): Promise<{ real: string; relative: string }> {
    if (typeof requested !== "string" || requested.trim() === "") {
      throw new JobRefused(
        "bad-request",
        "no script",
        "submit_job needs `script`, a file in the task folder",
      );
    }
    const hostPath = toHostPath(requested.trim(), this.#taskDir);
    const taskReal = await realpath(this.#taskDir);
    const outside = (p: string, root: string) => p !== root && !p.startsWith(root + sep);
    if (hostPath === undefined || outside(hostPath, this.#taskDir)) {
      throw new JobRefused(
        "script-outside-task",
        `script '${requested}'`,
        "scripts must lie inside the task folder",
        "Write the batch script into the task folder and pass its relative path",
      );
    }
    let real: string;
    try {
      real = await realpath(hostPath);
    } catch {
      throw new JobRefused(
        "script-not-found",
        `script '${requested}'`,
        "no such file in the task folder",
        "Write the script first, then submit it",
      );
    }
    if (outside(real, taskReal)) {
      throw new JobRefused(
        "script-outside-task",
        `script '${requested}' (a symlink to '${real}')`,
        "scripts must lie inside the task folder, also after following symlinks",
        "Copy the script into the task folder instead of linking to it",
      );
    }
    if (!(await lstat(real)).isFile()) {
      throw new JobRefused("script-not-file", `script '${requested}'`, "it is not a regular file");
    }
    return { real, relative: relative(taskReal, real) };
  }

  async #checkCaps(grant: JobGrant): Promise<void> {
    if (this.#jobs.size >= grant.maxTotalJobs) {
      throw new JobRefused(
        "total-cap",
        `job number ${this.#jobs.size + 1}`,
        `the task may submit at most ${grant.maxTotalJobs} jobs in total and has submitted ${this.#jobs.size}`,
      );
    }
    const live = [...(await this.#slurm.squeue(this.jobIds)).values()].filter((j) =>
      LIVE_STATES.has(j.state),
    );
    if (live.length >= grant.maxConcurrentJobs) {
      throw new JobRefused(
        "concurrent-cap",
        `another job while ${live.length} are pending or running (${live.map((j) => j.jobId).join(", ")})`,
        `the task may have at most ${grant.maxConcurrentJobs} at once`,
        "Wait for a job to finish (job_status) or cancel one (job_cancel)",
      );
    }
  }

  async #submitValidated(
    request: SubmitRequest,
    grant: JobGrant,
    resources: ValidResources,
    script: { real: string; relative: string },
    wait?: WaitHooks,
  ): Promise<SubmittedJob> {
    const name = jobName(request.name ?? basename(script.relative));
    // No link followed on the way, no FIFO or device opened, at most MAX_SCRIPT_BYTES: the agent may
    // have swapped the file since it was checked.
    const text = readScript(script, this.#taskDir, request.script);
    const scriptHash = sha256(text);
    // Freeze the validated script where the agent cannot change it before the job starts.
    await mkdir(join(this.#recordsDir, "scripts"), { recursive: true });
    const scriptCopy = join(
      this.#recordsDir,
      "scripts",
      `${Date.now()}-${randomBytes(3).toString("hex")}-${name}.sh`,
    );
    // Readable by all: a root runner's job container runs as the unprivileged sandbox user.
    await writeFile(scriptCopy, text, { mode: 0o555 });
    const args = (request.args ?? []).map(String);
    // The person approves exactly the frozen copy that sbatch gets.
    const denied = await this.#approve?.(
      { script: script.relative, text, sha256: scriptHash, name, args, resources },
      wait,
    );
    if (denied !== undefined) {
      throw new JobRefused("not-approved", `to submit '${script.relative}'`, denied);
    }
    const sandbox = this.#jobSandbox(script.relative);
    const outDir = await this.#outputDir();
    const job = {
      resources: {
        jobName: `scifi-${name}`,
        ...resources,
        partition: grant.partition,
        account: grant.account,
      },
      runId: this.runId,
      taskDir: this.#taskDir,
      stdoutPath: join(outDir, `${name}-%j.out`),
      stderrPath: join(outDir, `${name}-%j.err`),
      scriptCopy,
      scriptName: script.relative,
      args,
      sandbox,
    };
    const jobId = await this.#slurm.sbatch(agentJobArgs(job), renderAgentJobScript(job));
    const record: JobRecord = {
      jobId,
      name,
      script: script.relative,
      scriptSha256: scriptHash,
      args,
      stdoutPath: job.stdoutPath.replace("%j", jobId),
      stderrPath: job.stderrPath.replace("%j", jobId),
      submittedAt: new Date().toISOString(),
      lastState: "PENDING",
    };
    this.#jobs.set(jobId, record);
    await this.#saveRecords();
    return {
      jobId,
      name,
      stdout: `${JOB_OUTPUT_DIR}/${basename(record.stdoutPath)}`,
      stderr: `${JOB_OUTPUT_DIR}/${basename(record.stderrPath)}`,
      time: formatSlurmTime(resources.timeSec),
      cpus: resources.cpus,
      memory: describeBytes(resources.memoryBytes),
      gpus: resources.gpus,
      ignoredDirectives: findSbatchDirectives(text),
    };
  }

  /**
   * The sandbox of a job submitted now: without a person's yes to the run's network request
   * (pending or denied), no network, whatever the SAM and the site grant.
   */
  #jobSandbox(script: string): JobSandbox {
    if (this.#networkApproved === undefined || this.#networkApproved()) return this.#sandbox;
    if (this.#sandbox.engine === "none") {
      throw new JobRefused(
        "not-approved",
        `to submit '${script}'`,
        "the run's network request is not approved (pending or denied), and this site runs jobs without a container, so a job's network cannot be taken away",
        "Wait for a person's decision, or do the work in the sandbox",
      );
    }
    return this.#sandbox.network ? { ...this.#sandbox, network: false } : this.#sandbox;
  }

  /** Where SLURM writes the jobs' output: the run folder's `jobs/out/`, out of every sandbox's reach. */
  async #outputDir(): Promise<string> {
    const dir = join(this.#recordsDir, "out");
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  /**
   * Copies a job's output files into the task folder's `slurm-out/` (written without following any
   * link, never over a hard-linked file; the end of a file past MIRROR_CAP_BYTES). A copy the task
   * folder refuses (the agent put a link or a non-folder there) is left out: `job_output` still reads
   * the output itself.
   */
  async #mirror(record: JobRecord): Promise<void> {
    for (const path of [record.stdoutPath, record.stderrPath]) {
      if (!path.startsWith(join(this.#recordsDir, "out") + sep)) continue; // an older run's record
      if (!existsSync(path)) continue; // not started yet
      let data: Buffer;
      try {
        data = (await this.#readBytes(path, MIRROR_CAP_BYTES)).bytes;
      } catch {
        continue;
      }
      try {
        writeTaskFile(this.#taskDir, `${JOB_OUTPUT_DIR}/${basename(path)}`, data);
      } catch (error) {
        if (!(error instanceof HostPathRefused)) throw error;
      }
    }
  }

  /** The last `cap` bytes of an output file as text (job_output). */
  async #readOutput(
    path: string,
    cap: number,
  ): Promise<{ text: string; sizeBytes: number; truncated: boolean }> {
    const { bytes, ...size } = await this.#readBytes(path, cap);
    return { text: bytes.toString("utf8"), ...size };
  }

  /** Reads the last `cap` bytes of an output file in the run folder's `jobs/out/`, no link followed. */
  async #readBytes(
    path: string,
    cap: number,
  ): Promise<{ bytes: Buffer; sizeBytes: number; truncated: boolean }> {
    const expectedDir = await realpath(await this.#outputDir());
    let handle: FileHandle;
    try {
      if ((await realpath(dirname(path))) !== expectedDir) throw new Error("moved");
      // O_NONBLOCK: a FIFO at the output path must not hang the open.
      handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return { bytes: Buffer.alloc(0), sizeBytes: 0, truncated: false }; // not started yet
      throw new JobRefused(
        "output-not-file",
        `output '${basename(path)}'`,
        "it is not a regular file in the run's job output folder",
      );
    }
    try {
      const info = await handle.stat();
      if (!info.isFile())
        throw new JobRefused("output-not-file", `output '${basename(path)}'`, "it is not a regular file");
      const length = Math.min(info.size, cap);
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, info.size - length);
      return { bytes: buffer, sizeBytes: info.size, truncated: info.size > cap };
    } finally {
      await handle.close();
    }
  }

  async #saveRecords(): Promise<void> {
    const doc = { runId: this.runId, taskDir: this.#taskDir, jobs: [...this.#jobs.values()] };
    // Whole or not at all: a resume (or a reader) never finds a half-written record of the jobs.
    writeJsonAtomic(join(this.#recordsDir, "jobs.json"), doc);
  }
}

function toRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" ? { ...(value as Record<string, unknown>) } : { value };
}

export { describeGrant };
