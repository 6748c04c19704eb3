// The one way a site's hook command starts (the policy's `onApproval` and the daemon's `onFinish`):
// `sh -c` with the facts in SCIFI_* variables, output appended to a log, killed at a timeout. Never
// throws: a hook that cannot start resolves 127, one killed at the timeout resolves null.
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";

export const HOOK_TIMEOUT_MS = 60_000;

export interface SiteHook {
  /** The site's command line, run with `sh -c`. */
  command: string;
  /** Variables added to the runner's environment. */
  env: Record<string, string>;
  /** The log the hook's stdout and stderr are appended to (its folder is made). */
  log: string;
  /** Permission bits of a new log. */
  logMode?: number;
  timeoutMs?: number;
}

/** Runs the hook; resolves with its exit code (null: killed at the timeout; 127: it could not start). */
export function runSiteHook(hook: SiteHook): Promise<number | null> {
  return new Promise((resolve) => {
    try {
      mkdirSync(dirname(hook.log), { recursive: true });
      const out = openSync(hook.log, "a", hook.logMode ?? 0o644);
      const child = spawn("sh", ["-c", hook.command], {
        stdio: ["ignore", out, out],
        env: { ...process.env, ...hook.env },
      });
      closeSync(out);
      const timer = setTimeout(() => child.kill("SIGKILL"), hook.timeoutMs ?? HOOK_TIMEOUT_MS);
      child.once("error", () => {
        clearTimeout(timer);
        resolve(127);
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    } catch {
      resolve(127);
    }
  });
}
