// Attack on issue 41's context budget in a whole run (attacker a41c; the pre-scan's unit twin:
// test/agents/a41c-prescan-window.test.ts). Fixed (fix41-briefs): the review's brief quotes the
// claim and the summary within a tenth of the budget, cut with the runner's note saying where the
// whole text is (runner/agents/review.ts), and the pre-scan and the final review shorten task
// memory to fit (runner/agents/brief-budget.ts).
// Doc promise: docs/models.md "Context windows": "Every request the runner sends fits its model's
// context window less the reply's reservation"; docs/loop.md: "The task brief ... never elided".
// What happened before the fix, on Docker with a scripted model (labelled scripted; no real LLM) of a 16k window
// (vLLM `--max-model-len 16384`, the default reservation of 8,192 kept, a budget of 8,192): an
// agent that reports done with a long summary (28,560 characters, about 7,000 tokens: within its
// `max_tokens`) ends the run at its first review: the review's brief carries the work report whole,
// a brief is never elided, the provider refuses it ("input length and `max_tokens` exceed context
// limit: 8497 + 8192 > 16384") and the run ends failed, "model refused the request", after one of
// the three iterations the task asked for. Past the review, the pre-scan of iteration 3 would meet
// the same summaries again, whole, in task memory.
// Suggested fix: the runner's briefs quote agent text (claim, summary, findings) within a share of
// the budget, cut with a note (the full text is in the run's state and on the tape), and every
// request is checked against the budget before it is sent (see a41c-unshrinkable.pending.ts).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../runner/audit/types.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";

const SAM = `---
name: long-summaries
iterations: 3
---
# Long summaries

## To-do
Write \`out.txt\`.

## Expectation
- \`out.txt\` exists.
  \`\`\`check timeout=30s
  test -f out.txt
  \`\`\`
`;

const SUMMARY = "Checked every input file and wrote the result; see the notes above for each file. ".repeat(
  340,
);

function script(): string {
  const plan = '  - json: { node: root, rank: 1, skills: [], context: "", plan: "write it", direction: "d" }';
  const done = `  - tool_calls: [{ name: report_done, input: { claim: "out.txt written.", summary: ${JSON.stringify(SUMMARY)} } }]`;
  const review =
    "  - json: { items: [{ id: root/e1, pass: false, evidence: out.txt is missing }], findings: [out.txt is missing], fixes: [write out.txt], rank_adjustment: 0 }";
  return [
    "context_window: 16384",
    "prescan:",
    plan,
    plan,
    plan,
    "work:",
    done,
    done,
    done,
    "review:",
    review,
    review,
    review,
    "final_review:",
    "  - json: { group_suggestions: [], global_suggestions: [] }",
  ].join("\n");
}

describe.skipIf(!hasEngine("docker"))(
  "a41c: task memory in a whole run (docker)",
  { timeout: 300_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("a41c: an agent's long summaries do not end the run at a review or pre-scan past the window", async () => {
      const root = mkdtempSync(join(tmpdir(), "a41c-prescan-run-"));
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
      }).catch((error: Error) => ({ error }));
      const calls =
        "dir" in result
          ? readTape(join(result.dir, "audit.jsonl")).filter((r): r is CallRecord => r.kind === "call")
          : [];
      expect("error" in result ? result.error.message : "").toBe("");
      expect(calls.filter((c) => c.error).map((c) => `${c.role}: ${c.error?.message}`)).toEqual([]);
      expect(calls.filter((c) => c.role === "prescan")).toHaveLength(3);
      expect("outcome" in result && result.outcome.status).toBe("failed");
    });
  },
);
