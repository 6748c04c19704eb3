// The optional `onFinish` command of the site policy: run with `sh -c` after each task ends, with
// the task's facts in SCIFI_* variables. The daemon itself never makes a network call; whatever
// the site wants (mail, chat) is the command's business. Output goes to the hook log.
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";
import { runDir } from "../paths.ts";
import { daemonPaths, lastAttempt, type TaskRecord } from "./records.ts";

const HOOK_TIMEOUT_MS = 60_000;

export function hookEnv(home: string, record: TaskRecord): Record<string, string> {
  const attempt = lastAttempt(record);
  return {
    SCIFI_HOME: home,
    SCIFI_TASK: record.key,
    SCIFI_TASK_STATE: record.state,
    SCIFI_TASK_REASON: record.reason ?? "",
    SCIFI_TASK_SAM: record.source,
    SCIFI_TASK_NAME: record.name ?? "",
    SCIFI_RUN_ID: attempt?.runId ?? "",
    SCIFI_RUN_DIR: attempt ? runDir(home, attempt.runId) : "",
  };
}

/** Runs the hook; resolves with its exit code (or null when it was killed at the timeout). */
export function runHook(home: string, command: string, record: TaskRecord): Promise<number | null> {
  const dir = join(daemonPaths(home).dir, "logs");
  mkdirSync(dir, { recursive: true });
  const out = openSync(join(dir, "on-finish.log"), "a");
  const child = spawn("sh", ["-c", command], {
    stdio: ["ignore", out, out],
    env: { ...process.env, ...hookEnv(home, record) },
  });
  closeSync(out);
  const timer = setTimeout(() => child.kill("SIGKILL"), HOOK_TIMEOUT_MS);
  return new Promise((resolve) => {
    child.once("error", () => {
      clearTimeout(timer);
      resolve(127);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}
