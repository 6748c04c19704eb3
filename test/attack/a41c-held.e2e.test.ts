// An attack on issue 41's context budget that held on Docker (attacker a41c): an agent whose bash
// outputs are random bytes (invalid UTF-8, read back as U+FFFD: three bytes each), CJK and emoji,
// and escaped control characters, under a small scripted window (labelled scripted; no real LLM):
// the run passes, every request fits the window as the scripted model counts it, none is refused,
// and recall of the first output returns it.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../runner/audit/types.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { sent } from "./a41c-pass.ts";

const WINDOW = 16_000;

const SAM = `---
name: odd-bytes
iterations: 1
---
# Odd bytes

## To-do
Read the dumps, then write \`out.txt\`.

## Expectation
- \`out.txt\` exists.
  \`\`\`check timeout=30s
  test -f out.txt
  \`\`\`
`;

const COMMANDS = [
  "head -c 60000 /dev/urandom",
  "for i in $(seq 3000); do printf '漢字テキスト😀'; done",
  "head -c 30000 /dev/zero | tr '\\\\0' '\\\\033'",
  "head -c 60000 /dev/urandom | base64 -w0",
];

function script(): string {
  const steps = [...COMMANDS, ...COMMANDS].map(
    (command) => `  - tool_calls: [{ name: bash, input: { command: ${JSON.stringify(command)} } }]`,
  );
  return [
    `context_window: ${WINDOW}`,
    "prescan:",
    '  - json: { node: root, rank: 1, skills: [], context: "", plan: "read", direction: "dumps" }',
    "work:",
    ...steps,
    // The scripted server counts calls across roles: the pre-scan was call 1, the first dump call 2.
    "  - tool_calls: [{ name: recall, input: { id: toolu_scripted_2_0 } }]",
    '  - tool_calls: [{ name: bash, input: { command: "echo ok > out.txt" } }]',
    '  - tool_calls: [{ name: report_done, input: { claim: "out.txt written.", summary: "Read the dumps." } }]',
    "review:",
    "  - json: { items: [{ id: root/e1, pass: true, evidence: out.txt exists }], findings: [], fixes: [], rank_adjustment: 0 }",
    "final_review:",
    "  - json: { group_suggestions: [], global_suggestions: [] }",
  ].join("\n");
}

describe.skipIf(!hasEngine("docker"))(
  "a41c held: odd bytes under a small window (docker)",
  { timeout: 300_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("random bytes, CJK, emoji and control characters: passes, nothing past the window", async () => {
      const root = mkdtempSync(join(tmpdir(), "a41c-held-e2e-"));
      mkdirSync(join(root, "home"));
      mkdirSync(join(root, "task"));
      writeFileSync(join(root, "task", "task.md"), SAM);
      writeFileSync(join(root, "night.yaml"), script());
      const result = await runTask({
        home: join(root, "home"),
        task: join(root, "task", "task.md"),
        backend: "docker",
        model: `scripted:${join(root, "night.yaml")}`,
        retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      });
      expect(result.outcome.status).toBe("passed");
      const calls = readTape(join(result.dir, "audit.jsonl")).filter(
        (r): r is CallRecord => r.kind === "call",
      );
      expect(calls.filter((c) => c.error)).toEqual([]);
      for (const call of calls) expect(sent(call, "anthropic") + 8192).toBeLessThanOrEqual(WINDOW);
      // The recall answered with the first dump (not "No shortened tool output").
      const recall = calls.find((c) =>
        JSON.stringify(c.request.messages.at(-1)).includes("No shortened tool output"),
      );
      expect(recall).toBeUndefined();
      // The window was in play: the pass compacted, so the first dump was elided before its recall.
      const compactions = readHistory(join(result.dir, "history.jsonl")).filter((e) => e.type === "context");
      expect(compactions.length).toBeGreaterThanOrEqual(1);
    });
  },
);
