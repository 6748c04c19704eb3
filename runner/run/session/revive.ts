// A phase's sandbox that survives its deaths. A container killed from outside (docker kill, an engine
// restart) is not the agent's failure and not a failed check: the runner says so, starts a fresh
// sandbox and runs the interrupted call once more; a second such death ends the run (infrastructure).
// A sandbox that what ran in it may have ended (its own memory limit, Apptainer's signal-taking init:
// Sandbox.endedFromInside) is not the infrastructure's either (AE-8): the command it ended fails,
// is not run again, and a fresh sandbox takes the next call, so nothing the agent does turns its
// failure into an error that no pass rate counts.
import { sandboxName } from "../../policy/spec.ts";
import { RunEnding } from "../../run-ending.ts";
import type { ExecOptions, ExecResult, Sandbox } from "../../sandbox/types.ts";
import { SandboxError } from "../../sandbox/types.ts";

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
  /**
   * Told about each death, before anything is restarted: `deaths` counts those from outside (1, 2,
   * ...); `inside` is set, and `deaths` the count of those, for a death the sandbox's own may cause.
   */
  onDeath(deaths: number, detail: string, inside: boolean): void;
  /** Deaths from outside a phase survives (default 1). */
  maxDeaths?: number;
  /**
   * Why the run itself is stopping (a signal's interruption), if it is: the sandbox it stopped is
   * then no death and what ran in it no result; that error is thrown instead (a41d).
   */
  stopping?(): Error | undefined;
}

/** What a command that ended its own sandbox returns: a failure, with why, never run again. */
export function endedItsSandbox(
  result: ExecResult | undefined,
  detail: string,
  startedAt: number,
): ExecResult {
  const note =
    `[scifi: ${detail}. What ran in the sandbox may have ended it (its memory limit, or a signal to its init), ` +
    "so this command counts as failed and is not run again. A fresh sandbox runs the next command: " +
    "the task folder is kept; processes, /tmp and anything installed outside the task folder are gone.]\n";
  const stderr = result?.stderr ?? "";
  return {
    exitCode: 137,
    stdout: result?.stdout ?? "",
    stderr: `${stderr}${stderr === "" || stderr.endsWith("\n") ? "" : "\n"}${note}`,
    timedOut: false,
    truncated: result?.truncated ?? false,
    durationMs: result?.durationMs ?? Date.now() - startedAt,
  };
}

/** `first`, wrapped so that a call interrupted by the sandbox's death runs again on a fresh one. */
export function revivable(first: Sandbox, options: ReviveOptions): Sandbox {
  let current = first;
  let deaths = 0;
  let insideDeaths = 0;
  /** Stopped on purpose (suspend): the next call opens a fresh sandbox, which is not a death. */
  let suspended = false;
  const maxDeaths = options.maxDeaths ?? 1;

  /** Undefined when the sandbox lives (the outcome stands), else what happened. */
  const death = async (what: string): Promise<string | undefined> => {
    if (!current.alive || (await current.alive())) return undefined;
    const stopping = options.stopping?.();
    if (stopping) throw stopping;
    return `the ${current.backend} sandbox ${sandboxName(current.spec)} stopped running under the run (${what})`;
  };

  const wake = async (): Promise<void> => {
    if (!suspended) return;
    current = await options.open();
    suspended = false;
  };

  /** A death from outside: counted, told, and the end of the run past maxDeaths. */
  const outside = (detail: string): void => {
    deaths++;
    options.onDeath(deaths, detail, false);
    if (deaths > maxDeaths) throw new SandboxLost(`${detail}; it died ${deaths} times in one phase`);
  };

  /** A fresh sandbox for the next call; one dead before it ran anything died from outside. */
  const replace = async (): Promise<void> => {
    for (;;) {
      await current.stop().catch(() => undefined);
      current = await options.open();
      if (!current.alive || (await current.alive())) return;
      outside(
        `the ${current.backend} sandbox ${sandboxName(current.spec)} stopped running before its first call`,
      );
    }
  };

  /**
   * `call` on the current sandbox, again on a fresh one after a death. `asCommand`: the call ran
   * the sandbox's own code, which a death from inside fails instead of repeating: at once when the
   * call ended by a signal as the sandbox died (it died under it), on the second try when the engine
   * could not run it at all (the sandbox may have been dead before it, from an earlier command).
   */
  const again = async <T>(
    call: (sandbox: Sandbox) => Promise<T>,
    ended: (r: T) => boolean,
    asCommand?: (result: T | undefined, detail: string) => T,
  ): Promise<T> => {
    await wake();
    let triedAfterInside = false;
    for (;;) {
      let detail: string | undefined;
      let result: T | undefined;
      try {
        result = await call(current);
        detail = ended(result) ? await death("a command ended by a signal") : undefined;
        if (detail === undefined) return result;
      } catch (error) {
        if (!(error instanceof SandboxError)) throw error;
        detail = await death(error.message);
        if (detail === undefined) throw error;
      }
      if (await (current.endedFromInside?.() ?? Promise.resolve(false)).catch(() => false)) {
        insideDeaths++;
        options.onDeath(insideDeaths, detail, true);
        await replace();
        if (asCommand && (result !== undefined || triedAfterInside)) return asCommand(result, detail);
        triedAfterInside = true;
        continue;
      }
      outside(detail);
      await replace();
    }
  };

  return {
    get backend() {
      return current.backend;
    },
    get spec() {
      return current.spec;
    },
    exec: (command: string[] | string, execOptions?: ExecOptions): Promise<ExecResult> => {
      const startedAt = Date.now();
      return again(
        (s) => s.exec(command, execOptions),
        // 128+N: killed by signal N; Docker reports -1 or 137 for an exec whose container died.
        (r) => r.exitCode < 0 || r.exitCode >= 128,
        (r, detail) => endedItsSandbox(r, detail, startedAt),
      );
    },
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
