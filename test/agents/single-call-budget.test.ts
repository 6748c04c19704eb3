// The single-call agents under the context budget beside the pre-scan (issue 41, attacker a41c;
// fix41-briefs): the final review shortens task memory like the pre-scan, and a request that
// cannot fit even shortened is refused before it is sent, naming what is too long (scripted model
// with a `context_window`, real wire format).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { RequestTooLong } from "../../runner/agents/brief-budget.ts";
import { runFinalReview } from "../../runner/agents/final-review.ts";
import { runPrescan } from "../../runner/agents/prescan.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { formatEntry } from "../../runner/memory/entries.ts";
import { parseSamString } from "../../runner/sam/parse.ts";
import { sent } from "../attack/a41c-pass.ts";
import { calls, writeScript } from "../llm/helpers.ts";

let model: Gateway | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

async function scripted(lines: string[]): Promise<{ tape: string }> {
  const tape = join(mkdtempSync(join(tmpdir(), "a41c-single-")), "audit.jsonl");
  model = (await createModel(
    `scripted:${writeScript(lines.join("\n"))}`,
    new AuditTape(tape, { runId: "r1" }),
    {
      retry: { maxRetries: 0 },
    },
  )) as Gateway;
  return { tape };
}

const memory = Array.from({ length: 8 }, (_, i) =>
  formatEntry({
    id: `r1/it${i + 1}/review`,
    time: "2026-12-04T03:00:00.000Z",
    runId: "r1",
    role: "review",
    title: `Iteration ${i + 1}: review failed root`,
    body: `\`\`\`text\n${"The fit does not converge; residuals above tolerance. ".repeat(120)}\n\`\`\``,
  }),
).join("");

it("a41c: the final review of a long night keeps task memory inside a 16k window (scripted)", async () => {
  const { tape } = await scripted([
    "context_window: 16384",
    "final_review:",
    "  - json: { group_suggestions: [], global_suggestions: [] }",
  ]);
  const suggestions = await runFinalReview(model as Gateway, {
    runId: "r1",
    title: "Night",
    outcome: "failed",
    reason: "iteration limit reached",
    iterations: 8,
    group: "(none)",
    taskMemory: { text: memory, ref: "memory:task:r1", sha256: "x" },
    history: "",
    controlRank: 1,
    meta: { runId: "r1" },
  });
  expect(suggestions).toEqual({ group_suggestions: [], global_suggestions: [] });
  const [call, ...more] = calls(tape);
  expect(more).toEqual([]);
  expect(sent(call as NonNullable<typeof call>, "anthropic") + 8192).toBeLessThanOrEqual(16384);
  const prompt = JSON.stringify(call?.request.messages);
  expect(prompt).toContain("### Iteration 1: review failed root (title only)");
  expect(prompt).toContain("Iteration 8: review failed root");
  expect(prompt).toContain("[scifi shortened this task memory");
});

it("a41c: a pre-scan whose skill index alone passes the window is refused before it is sent (scripted)", async () => {
  const { tape } = await scripted([
    "context_window: 8192",
    "prescan:",
    '  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }',
  ]);
  const dir = mkdtempSync(join(tmpdir(), "a41c-big-index-"));
  const parsed = parseSamString(
    "---\nname: big\n---\n# Big\n\n## To-do\nFit.\n\n## Expectation\n- Fitted.\n",
    join(dir, "task.md"),
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  const error = await runPrescan(model as Gateway, {
    root: parsed.sam.root,
    complete: new Set(),
    iteration: 1,
    rank: { min: 1, max: 1, suggested: 1 },
    controlRank: 1,
    taskMemory: { text: memory, ref: "memory:task:r1", sha256: "x" },
    groupMemory: undefined,
    history: "",
    skillIndex: Array.from(
      { length: 300 },
      (_, i) => `- skill-${i}: fits spectra of kind ${i}. When to use: always.`,
    ).join("\n"),
    skillNames: [],
    meta: { runId: "r1" },
  }).catch((e: Error) => e);
  expect(error).toBeInstanceOf(RequestTooLong);
  expect((error as Error).message).toMatch(
    /the prescan request holds about \d+ tokens, past the model's prompt budget of 6144 .*it was not sent\. Largest parts: the skill index \(about \d+ tokens\)/,
  );
  // Nothing reached the model.
  expect(calls(tape)).toEqual([]);
});
