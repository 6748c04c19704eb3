// Shared by attacker a41's end-to-end files: a direct `scifi run` of the daemon's trivial task on
// a priced scripted model (labelled: no real LLM) served from the test process, driven from
// outside as a person would (`scifi ctl`, signals, files in the run folder).
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import type { RunState } from "../../runner/run-folder/state.ts";
import { REPO, waitFor } from "../run/harness.ts";

export const CLI = join(REPO, "bin", "scifi.js");
const exec = promisify(execFile);

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI, asynchronously: the scripted server lives in this process and must keep answering. */
export async function cli(home: string, args: string[]): Promise<Result> {
  return exec(process.execPath, [CLI, ...args], {
    env: { ...process.env, SCIFI_HOME: home, SCIFI_CTL_POLL_MS: "200" },
    timeout: 300_000,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}

/** Containers of a run, running or not (its phase sandboxes carry the run id in `scifi.run`). */
export function containersOf(runId: string): string[] {
  const out = execFileSync(
    "docker",
    ["ps", "-a", "--filter", "label=scifi=1", "--format", '{{.ID}} {{.Label "scifi.run"}}'],
    { encoding: "utf8" },
  );
  return out
    .split("\n")
    .filter((l) => runId !== "" && (l.split(" ")[1] ?? "").startsWith(runId))
    .map((l) => l.split(" ")[0] ?? "");
}

export function readState(runDir: string): RunState {
  return JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as RunState;
}

export { pricedTask } from "../run/session/priced-task.ts";

export interface Started {
  child: ChildProcess;
  out: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  runDir: string;
  runId: string;
}

/** `scifi run` of the task, in the background, once its run folder exists. */
export async function startRun(
  home: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Started> {
  const child = spawn(process.execPath, [CLI, "run", ...args], {
    env: { ...process.env, SCIFI_HOME: home, SCIFI_CTL_POLL_MS: "200", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout?.on("data", (d: Buffer) => {
    text += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    text += d.toString();
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once("exit", (code, signal) => r({ code, signal })),
  );
  const runDir = await waitFor(() => {
    const runs = existsSync(join(home, "runs")) ? readdirSync(join(home, "runs")) : [];
    return runs[0] && existsSync(join(home, "runs", runs[0], "state.json"))
      ? join(home, "runs", runs[0])
      : undefined;
  });
  return { child, out: () => text, exit, runDir, runId: runDir.split("/").at(-1) ?? "" };
}
