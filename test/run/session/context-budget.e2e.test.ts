// A long pass under a small scripted window, end to end on Docker: a `scifi run` whose bash
// outputs total four times the window passes with no request past it (both wire formats), and its
// replay (by run id, on a fresh copy) compacts at the same points: same verdict, zero divergences.
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { promptTokens } from "../../../runner/audit/prefix-cache.ts";
import type { CallRecord } from "../../../runner/audit/types.ts";
import { readTape, verifyTape } from "../../../runner/audit/verify.ts";
import { DEFAULT_REPLY_TOKENS } from "../../../runner/llm/context-window.ts";
import { readHistory } from "../../../runner/memory/history.ts";
import { runTask } from "../../../runner/run/setup.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { ensureImage } from "../harness.ts";

const WINDOW = 24_000;
const STEPS = 24;
// Each output: 16,000 NUL bytes, a binary dump (JSON carries each as six bytes: 24,000 tokens as the
// scripted model counts, a window alone): the runner's cap and its escaped-size estimate must hold.
const CHARS = 16_000;
const RETRY = { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 };

const SAM = `---
name: long-night
iterations: 1
---
# A long pass

## To-do
Look at the build logs, then write \`out.txt\`.

## Expectation
- \`out.txt\` exists.
  \`\`\`check timeout=30s
  test -f out.txt
  \`\`\`
`;

function script(): string {
  const steps = Array.from(
    { length: STEPS },
    (_, i) =>
      `  - tool_calls: [{ name: bash, input: { command: "printf 'log ${i}: '; head -c ${CHARS} /dev/zero | tr '\\\\\\\\0' x" } }]`,
  );
  return [
    `context_window: ${WINDOW}`,
    "prescan:",
    '  - json: { node: root, rank: 1, skills: [], context: "", plan: "read the logs", direction: "logs" }',
    "work:",
    ...steps,
    '  - tool_calls: [{ name: bash, input: { command: "echo ok > out.txt" } }]',
    '  - tool_calls: [{ name: report_done, input: { claim: "out.txt written.", summary: "Read the logs; wrote out.txt." } }]',
    "review:",
    "  - json: { items: [{ id: root/e1, pass: true, evidence: out.txt exists }], findings: [], fixes: [], rank_adjustment: 0 }",
    "final_review:",
    "  - json: { group_suggestions: [], global_suggestions: [] }",
  ].join("\n");
}

function taskCopy(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "task.md"), SAM);
  return join(dir, "task.md");
}

describe.skipIf(!hasEngine("docker"))(
  "a long pass under a small window (docker)",
  { timeout: 600_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it.each([
      ["scripted", "anthropic"],
      ["scripted-openai", "openai"],
    ] as const)(
      "%s: passes, no request past the window, and its replay does not diverge",
      async (scheme, format) => {
        const root = mkdtempSync(join(tmpdir(), "scifi-context-"));
        const home = join(root, "home");
        mkdirSync(home);
        const file = join(root, "night.yaml");
        writeFileSync(file, script());
        const result = await runTask({
          home,
          task: taskCopy(root, "task"),
          backend: "docker",
          model: `${scheme}:${file}`,
          retry: RETRY,
        });
        expect(result.outcome.status).toBe("passed");
        const calls = readTape(join(result.dir, "audit.jsonl")).filter(
          (r): r is CallRecord => r.kind === "call",
        );
        expect(calls.filter((c) => c.error)).toEqual([]);
        const outputs = calls
          .filter((c) => c.role === "work")
          .flatMap((c) => c.response?.content ?? [])
          .filter((b) => b.type === "tool_use").length;
        expect(outputs).toBe(STEPS + 2);
        for (const call of calls)
          expect(promptTokens(format, call.wire) + DEFAULT_REPLY_TOKENS).toBeLessThanOrEqual(WINDOW);
        const compactions = readHistory(join(result.dir, "history.jsonl")).filter(
          (e) => e.type === "context",
        );
        expect(compactions.length).toBeGreaterThanOrEqual(2);

        // The replay: a fresh copy of the task, the recorded run in its home, the same requests.
        const again = join(root, "again");
        mkdirSync(join(again, "runs"), { recursive: true });
        cpSync(result.dir, join(again, "runs", result.runId), { recursive: true });
        const replayed = await runTask({
          home: again,
          task: taskCopy(root, "task-again"),
          backend: "docker",
          model: `replay:${result.runId}`,
          retry: RETRY,
        });
        expect(replayed.outcome).toEqual(result.outcome);
        const tape = readTape(join(replayed.dir, "audit.jsonl"));
        expect(tape.filter((r) => r.kind === "call" && r.error)).toEqual([]);
        const end = tape.find((r) => r.kind === "event" && r.event === "replay_end");
        expect(end?.kind === "event" && end.data).toEqual({
          answered: calls.length,
          recorded: calls.length,
          unused: 0,
        });
        expect(verifyTape(join(replayed.dir, "audit.jsonl"))).toMatchObject({ ok: true });
      },
    );
  },
);
