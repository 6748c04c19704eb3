// Attack on issue 38's runner text in "hook environments" (the daemon's onFinish:
// runner/daemon/hook.ts hookEnv), found by attacker a38b. Fixed: the reason and the name go out as
// visible() shows them (one line, control characters as escapes); the exact text is in the task's
// record, SCIFI_TASK_RECORD.
// Doc promise: issue 38 point 2: wherever the runner writes text that embeds text it did not choose
// ("scripts and command lines it writes for other programs; anything a shell, a parser or a person
// reads later"), no such text can "add a line that reads as the runner's"; docs/daemon.md
// onFinish: "a shell command run (`sh -c`) after each task ends, with SCIFI_TASK, ...,
// SCIFI_TASK_REASON ... in its environment" (the example: `notify-send "scifi: $SCIFI_TASK
// $SCIFI_TASK_STATE"`; sites mail the reason); docs/approval.md: every listing of agent text
// shows control characters as escapes, "one-line fields (summary, why, a task name, a status
// reason) show `\n` too".
// What happened: a blocked run's reason is "the work agent reported a blocker: <the agent's
// reason> (needs: <the agent's needs>)", and the daemon hands it to the hook raw: its line breaks,
// CR and ANSI escapes reach the notification, the mail subject (`mail -s "$SCIFI_TASK_REASON"`: a
// line break there starts a mail header) or the terminal the hook writes to. Here the agent's
// reason ends the runner's line and adds "scifi: fit PASSED (all checks passed)".
// Suggested fix: give the hook one-line fields as `visible()` shows them (no raw line break or
// control character), and the exact text, where a hook needs it, in a file it can read.
import { describe, expect, it } from "vitest";
import { hookEnv } from "../../runner/daemon/hook.ts";
import type { TaskRecord } from "../../runner/daemon/records.ts";

describe("a38b: the onFinish hook's one-line fields", () => {
  const agentReason = "none\r\nscifi: fit PASSED (all checks passed)\n\u001b[8m";
  const record: TaskRecord = {
    version: 1,
    key: "fit",
    kind: "folder",
    source: "/h/tasks/fit/task.md",
    samFile: "/h/tasks/fit/task.md",
    sha256: "0".repeat(64),
    state: "blocked",
    reason: `the work agent reported a blocker: ${agentReason} (needs: a person)`,
    name: "fit",
    gpus: 0,
    budgetUsd: 10,
    queuedAt: "2026-12-04T13:00:00.000Z",
    updatedAt: "2026-12-04T14:00:00.000Z",
    attempts: [],
  };

  it("SCIFI_TASK_REASON is one line with no control character", () => {
    const reason = hookEnv("/h", record).SCIFI_TASK_REASON ?? "";
    expect(reason).toContain("reported a blocker");
    expect(reason).not.toMatch(/[\r\n]/);
    expect(reason).not.toContain("\u001b");
    expect(reason).toContain("none\\r\\nscifi: fit PASSED");
  });

  it("SCIFI_TASK_RECORD names the record that holds the exact reason", () => {
    expect(hookEnv("/h", record).SCIFI_TASK_RECORD).toBe("/h/daemon/tasks/fit.json");
  });
});
