// A phase's sandbox that survives one death. A container killed from outside (docker kill, the OOM
// killer, an engine restart) is not the agent's failure and not a failed check: the runner says so,
// starts a fresh sandbox and runs the interrupted call once more. A second death ends the run.
import { sandboxName } from "../policy/spec.ts";
import { RunEnding } from "../run-ending.ts";
import type { ExecOptions, ExecResult, Sandbox } from "../sandbox/types.ts";
import { SandboxError } from "../sandbox/types.ts";

/** The sandbox died more often than a phase allows: the run ends (exit code 4, not a task failure). */
export class SandboxLost extends RunEnding {
  override name = "SandboxLost";
  constructor(message: string) {
    super(message, { status: "failed", limit: "sandbox", prefix: "sandbox", cause: "sandbox" });
  }
}

export interface ReviveOptions {
  /** Starts a fresh sandbox for the same phase. */
  open(): Promise<Sandbox>;
  /** Told about each death (1, 2, ...), before anything is restarted. */
  onDeath(deaths: number, detail: string): void;
  /** Deaths a phase survives (default 1). */
  maxDeaths?: number;
}

/** `first`, wrapped so that a call interrupted by the sandbox's death runs again on a fresh one. */
export function revivable(first: Sandbox, options: ReviveOptions): Sandbox {
  let current = first;
  let deaths = 0;
  /** Stopped on purpose (suspend): the next call opens a fresh sandbox, which is not a death. */
  let suspended = false;
  const maxDeaths = options.maxDeaths ?? 1;

  /** Undefined when the sandbox lives (the outcome stands), else what happened. */
  const death = async (what: string): Promise<string | undefined> => {
    if (!current.alive || (await current.alive())) return undefined;
    return `the ${current.backend} sandbox ${sandboxName(current.spec)} stopped running under the run (${what})`;
  };

  const wake = async (): Promise<void> => {
    if (!suspended) return;
    current = await options.open();
    suspended = false;
  };

  const again = async <T>(call: (sandbox: Sandbox) => Promise<T>, ended: (r: T) => boolean): Promise<T> => {
    await wake();
    for (;;) {
      let detail: string | undefined;
      try {
        const result = await call(current);
        detail = ended(result) ? await death("a command ended by a signal") : undefined;
        if (detail === undefined) return result;
      } catch (error) {
        if (!(error instanceof SandboxError)) throw error;
        detail = await death(error.message);
        if (detail === undefined) throw error;
      }
      deaths++;
      options.onDeath(deaths, detail);
      if (deaths > maxDeaths) throw new SandboxLost(`${detail}; it died ${deaths} times in one phase`);
      await current.stop().catch(() => undefined);
      current = await options.open();
    }
  };

  return {
    get backend() {
      return current.backend;
    },
    get spec() {
      return current.spec;
    },
    exec: (command: string[] | string, execOptions?: ExecOptions): Promise<ExecResult> =>
      again(
        (s) => s.exec(command, execOptions),
        // 128+N: killed by signal N; Docker reports -1 or 137 for an exec whose container died.
        (r) => r.exitCode < 0 || r.exitCode >= 128,
      ),
    readFile: (path: string) =>
      again(
        (s) => s.readFile(path),
        () => false,
      ),
    writeFile: (path: string, data: string | Buffer) =>
      again(
        (s) => s.writeFile(path, data),
        () => false,
      ),
    stop: () => current.stop(),
    suspend: async () => {
      if (suspended) return;
      suspended = true;
      await current.stop().catch(() => undefined);
    },
    resume: wake,
    quotaExceeded: () => current.quotaExceeded?.(),
    alive: () => current.alive?.() ?? Promise.resolve(true),
  };
}
