// A thin, typed wrapper over the SLURM client commands (sbatch, squeue, scontrol, sacct, scancel).
// It runs them host-side with a minimal environment, so nothing from scifi's own environment
// (API keys above all) can reach a job even if a site's SLURM exports the environment by default.
import { execFile } from "node:child_process";
import { SlurmError, SlurmUnavailable } from "./errors.ts";

/** A job's state as scifi reports it. `state` is SLURM's word (PENDING, RUNNING, COMPLETED, FAILED, ...). */
export interface SlurmJobInfo {
  jobId: string;
  state: string;
  /** `0:0` style `exit:signal`, when known (scontrol/sacct). */
  exitCode?: string;
  /** Why the job waits or ended, as SLURM says it. */
  reason?: string;
  elapsed?: string;
  timeLimit?: string;
  stdout?: string;
  stderr?: string;
  /** Which command answered: squeue while the job is live, then scontrol, then sacct. */
  source: "squeue" | "scontrol" | "sacct";
}

/** States in which a job still holds or waits for resources. */
export const LIVE_STATES: ReadonlySet<string> = new Set([
  "PENDING",
  "CONFIGURING",
  "RUNNING",
  "COMPLETING",
  "SUSPENDED",
  "REQUEUED",
  "RESIZING",
  "SIGNALING",
  "STAGE_OUT",
  "STOPPED",
]);

export interface SlurmClientOptions {
  /** Folder holding the client binaries; default: found on PATH. */
  binDir?: string;
  /** Per command timeout (default 30 s). */
  timeoutMs?: number;
}

interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class SlurmClient {
  readonly #bin: (name: string) => string;
  readonly #timeoutMs: number;

  constructor(options: SlurmClientOptions = {}) {
    this.#bin = (name) => (options.binDir ? `${options.binDir}/${name}` : name);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  /**
   * Submits a batch script given as text (sbatch reads it from stdin); returns the job id.
   * `inheritEnv` passes scifi's whole environment to sbatch: only for the user's own `scifi run`
   * (task placement), which needs its model keys; agent jobs never get it.
   */
  async sbatch(args: string[], script: string, options: { inheritEnv?: boolean } = {}): Promise<string> {
    const r = await this.#run(
      "sbatch",
      ["--parsable", ...args],
      script,
      options.inheritEnv ? process.env : undefined,
    );
    if (r.code !== 0) throw new SlurmError("sbatch", r.stderr);
    // --parsable prints `jobid` or `jobid;cluster`.
    const jobId = r.stdout.trim().split(";")[0] ?? "";
    if (!/^\d+$/.test(jobId)) throw new SlurmError("sbatch", `unexpected output '${r.stdout.trim()}'`);
    return jobId;
  }

  /** Live jobs among `jobIds` (those squeue still lists), keyed by id. */
  async squeue(jobIds: readonly string[]): Promise<Map<string, SlurmJobInfo>> {
    const found = new Map<string, SlurmJobInfo>();
    if (jobIds.length === 0) return found;
    const r = await this.#run("squeue", ["-h", "-t", "all", "-j", jobIds.join(","), "-o", "%i|%T|%r|%M|%l"]);
    // squeue exits 1 with "Invalid job id specified" once every listed job has left the controller.
    if (r.code !== 0 && !/Invalid job id/i.test(r.stderr)) throw new SlurmError("squeue", r.stderr);
    for (const line of r.stdout.split("\n")) {
      const [jobId, state, reason, elapsed, timeLimit] = line.trim().split("|");
      if (!jobId || !state) continue;
      found.set(jobId, { jobId, state, reason: clean(reason), elapsed, timeLimit, source: "squeue" });
    }
    return found;
  }

  /** `scontrol show job`: known while the controller keeps the job (MinJobAge after it ends). */
  async scontrolShowJob(jobId: string): Promise<SlurmJobInfo | undefined> {
    const r = await this.#run("scontrol", ["show", "job", "-o", jobId]);
    if (r.code !== 0) {
      if (/Invalid job id/i.test(r.stderr)) return undefined;
      throw new SlurmError("scontrol show job", r.stderr);
    }
    const fields = parseScontrolLine(r.stdout);
    const state = fields.get("JobState");
    if (!state) return undefined;
    return {
      jobId,
      state,
      exitCode: fields.get("ExitCode"),
      reason: clean(fields.get("Reason")),
      elapsed: fields.get("RunTime"),
      timeLimit: fields.get("TimeLimit"),
      stdout: fields.get("StdOut"),
      stderr: fields.get("StdErr"),
      source: "scontrol",
    };
  }

  /**
   * `scontrol update JobId=… TimeLimit=…`: a live job's time limit. SLURM lets a user lower it; only
   * an operator or administrator may raise it on most sites: the SlurmError then carries SLURM's word.
   */
  async updateTimeLimit(jobId: string, limit: string): Promise<void> {
    const r = await this.#run("scontrol", ["update", `JobId=${jobId}`, `TimeLimit=${limit}`]);
    if (r.code !== 0) throw new SlurmError("scontrol update", r.stderr);
  }

  /** `sacct`: the accounting record, where the site keeps one. Undefined when sacct knows nothing. */
  async sacct(jobId: string): Promise<SlurmJobInfo | undefined> {
    const r = await this.#run("sacct", ["-n", "-P", "-X", "-j", jobId, "-o", "JobID,State,ExitCode,Elapsed"]);
    if (r.code !== 0) return undefined; // no accounting storage configured: nothing to add
    const line = r.stdout.split("\n").find((l) => l.startsWith(`${jobId}|`));
    if (!line) return undefined;
    const [, state, exitCode, elapsed] = line.split("|");
    if (!state) return undefined;
    // sacct writes e.g. `CANCELLED by 0`: keep the state word.
    return { jobId, state: state.split(" ")[0] ?? state, exitCode, elapsed, source: "sacct" };
  }

  /** The best current knowledge of a job: squeue, then scontrol, then sacct. */
  async jobInfo(jobId: string): Promise<SlurmJobInfo | undefined> {
    const live = (await this.squeue([jobId])).get(jobId);
    if (live && LIVE_STATES.has(live.state)) {
      // squeue has no exit code or output paths: add them from scontrol when it knows the job.
      const detail = await this.scontrolShowJob(jobId);
      return detail ? { ...detail, state: live.state, source: "squeue" } : live;
    }
    return (await this.scontrolShowJob(jobId)) ?? live ?? (await this.sacct(jobId));
  }

  async scancel(jobIds: readonly string[]): Promise<void> {
    if (jobIds.length === 0) return;
    const r = await this.#run("scancel", [...jobIds]);
    if (r.code !== 0) throw new SlurmError("scancel", r.stderr);
  }

  /** True when sinfo answers. */
  async available(): Promise<boolean> {
    try {
      return (await this.#run("sinfo", ["-h", "-o", "%P"])).code === 0;
    } catch {
      return false;
    }
  }

  #run(name: string, args: string[], stdin?: string, env?: NodeJS.ProcessEnv): Promise<CommandResult> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        this.#bin(name),
        args,
        { env: env ?? minimalEnv(), timeout: this.#timeoutMs, maxBuffer: 4 * 1024 * 1024 },
        (error, stdout, stderr) => {
          if (error && (error as NodeJS.ErrnoException).code === "ENOENT") {
            reject(new SlurmUnavailable(`'${name}' is not installed or not on PATH`));
            return;
          }
          if (error?.killed) {
            reject(new SlurmUnavailable(`'${name}' did not answer within ${this.#timeoutMs} ms`));
            return;
          }
          const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
          if (
            code !== 0 &&
            /Unable to contact slurm controller|Could not establish a configuration/i.test(stderr)
          ) {
            reject(new SlurmUnavailable(stderr.trim()));
            return;
          }
          resolve({ code, stdout, stderr });
        },
      );
      // A command that exits before reading its stdin must not crash scifi with EPIPE.
      child.stdin?.on("error", () => {});
      child.stdin?.end(stdin ?? "");
    });
  }
}

/** Only what the client commands need: never API keys or other secrets of the scifi process. */
function minimalEnv(): NodeJS.ProcessEnv {
  const keep = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "SLURM_CONF", "TZ"];
  const env: NodeJS.ProcessEnv = {};
  for (const key of keep) if (process.env[key] !== undefined) env[key] = process.env[key];
  return env;
}

/** Parses `scontrol show job -o` output (space-separated Key=Value; values may not contain spaces). */
export function parseScontrolLine(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const token of text.trim().split(/\s+/)) {
    const eq = token.indexOf("=");
    if (eq > 0) fields.set(token.slice(0, eq), token.slice(eq + 1));
  }
  return fields;
}

function clean(value: string | undefined): string | undefined {
  return value === undefined || value === "None" || value === "(null)" || value === "" ? undefined : value;
}
