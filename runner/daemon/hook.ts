// The optional `onFinish` command of the site policy: run with `sh -c` after each task ends, with
// the task's facts in SCIFI_* variables. The daemon itself never makes a network call; whatever
// the site wants (mail, chat) is the command's business. Output goes to the hook log.
// The reason and the name may hold text the agent or the SAM chose (a blocked run's reason is the
// agent's blocker): a hook puts them in a notification, a terminal or a mail header, so they go out
// as one line with every control character shown as an escape (visible); the exact text is in the
// task's record, SCIFI_TASK_RECORD.
import { join } from "node:path";
import { runDir } from "../paths.ts";
import { runSiteHook } from "../site-hook.ts";
import { visible } from "../terminal-text.ts";
import { daemonPaths, lastAttempt, type TaskRecord } from "./records.ts";

export function hookEnv(home: string, record: TaskRecord): Record<string, string> {
  const attempt = lastAttempt(record);
  return {
    SCIFI_HOME: home,
    SCIFI_TASK: record.key,
    SCIFI_TASK_STATE: record.state,
    SCIFI_TASK_REASON: visible(record.reason ?? ""),
    SCIFI_TASK_SAM: record.source,
    SCIFI_TASK_NAME: visible(record.name ?? ""),
    SCIFI_TASK_RECORD: daemonPaths(home).task(record.key),
    SCIFI_RUN_ID: attempt?.runId ?? "",
    SCIFI_RUN_DIR: attempt ? runDir(home, attempt.runId) : "",
  };
}

/** Runs the hook; resolves with its exit code (or null when it was killed at the timeout). */
export function runHook(home: string, command: string, record: TaskRecord): Promise<number | null> {
  return runSiteHook({
    command,
    env: hookEnv(home, record),
    log: join(daemonPaths(home).dir, "logs", "on-finish.log"),
  });
}
