// What agents read of the records holds nothing that changes between two runs of the same task:
// no time, seq or audit head in history events, host task-folder paths as /task, no time or run id
// in memory entries (a replay must send the same prompts).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { appendEntry, readMemory } from "../../runner/memory/entries.ts";
import { HistoryTape } from "../../runner/memory/history.ts";
import { promptHistoryLines } from "../../runner/memory/prompt-history.ts";

describe("records as agents read them", () => {
  it("the history tail: no time, seq or audit head; the task folder as /task", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-prompt-history-"));
    const task = join(dir, "task");
    const tape = new HistoryTape(join(dir, "history.jsonl"));
    tape.append({ type: "run_start", sam: join(task, "task.md"), sha256: "abc", backend: "docker" });
    tape.append({ type: "iteration_start", iteration: 1 });
    tape.append({
      type: "tampering",
      iteration: 1,
      file: join(task, "checks/run.sh"),
      expected: "e",
      actual: "a",
    });
    const tail = tape.tail(2);
    expect(tail).toEqual([
      { type: "iteration_start", iteration: 1 },
      { type: "tampering", iteration: 1, file: "/task/checks/run.sh", expected: "e", actual: "a" },
    ]);
    const lines = promptHistoryLines(
      [
        JSON.stringify({
          seq: 1,
          time: "2026-01-01T00:00:00Z",
          type: "run_start",
          sam: join(task, "task.md"),
        }),
        JSON.stringify({
          seq: 9,
          time: "2026-01-01T00:00:09Z",
          type: "run_end",
          outcome: "passed",
          reason: "r",
          audit: { seq: 3 },
        }),
      ].join("\n"),
    );
    expect(lines).toBe(
      '{"type":"run_start","sam":"task.md"}\n{"type":"run_end","outcome":"passed","reason":"r"}',
    );
  });

  it("memory: title, role and body; no time, run id or mark line; a person's notes kept", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "scifi-prompt-memory-")), "memory.md");
    await appendEntry(file, {
      id: "20260101-000000-x-abcdef/it1/review",
      time: "2026-01-01T00:00:00.000Z",
      runId: "20260101-000000-x-abcdef",
      role: "review",
      title: "Iteration 1: review failed root",
      body: "**Tried:** nothing",
    });
    expect(readMemory(file)).toBe("### Iteration 1: review failed root\n_review_\n\n**Tried:** nothing\n\n");
  });
});
