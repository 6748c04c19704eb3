// The real `scifi` CLI as a child process, for tests that check what a user sees: exit code,
// stdout and stderr. A non-zero exit is a result to assert on, not a thrown error.
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const exec = promisify(execFile);
const BIN = new URL("../../bin/scifi.js", import.meta.url).pathname;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `scifi ARGS` with SCIFI_HOME=home, killed after `timeoutMs`. */
export function runScifi(home: string, args: string[], timeoutMs: number): Promise<CliResult> {
  return exec(process.execPath, [BIN, ...args], {
    env: { ...process.env, SCIFI_HOME: home },
    timeout: timeoutMs,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: CliResult) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}
