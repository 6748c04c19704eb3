// Attack on issue 41's context budget (attacker a41c; runner/agents/prescan.ts, runner/agents/
// structured.ts, runner/run/phases/prescan.ts). Fixed (fix41-briefs): the pre-scan gives task memory
// what the rest of its brief leaves of the gateway's budget (runner/agents/brief-budget.ts): the
// newest entries whole, the older ones as their titles, with the runner's note naming the memory
// file; every structured call is checked against the budget before it is sent.
// Doc promise: docs/models.md "Context windows": "Every request the runner sends fits its model's
// context window less the reply's reservation"; design.md: "Every request to a model fits its
// context window"; issue 41: a long night on the cluster user's 32k-token vLLM model.
// What happened before the fix: only work and review passes (runPass) are kept under the budget. The pre-scan (and
// the final review, runner/run/phases/final.ts) send the whole task memory, which grows by one
// entry for every failed iteration (the agent's claim and summary, each failed check's last 20
// lines, the findings and fixes: runner/run/session/memory-writes.ts). On a night of nine
// failed iterations under a 32k window (each summary about 2,000 tokens, three failed checks), the
// pre-scan of iteration 10 passes the window: the provider refuses it, no compaction and no retry
// exist there, and the run ends ContextTooLong at the pre-scan. An agent can
// reach it sooner: its report_done summary goes into task memory unbounded.
// Suggested fix: give every single-call agent (pre-scan, final review, critique, tracer, ask) the
// same budget: estimate the request, and past it keep the newest task-memory entries whole and the
// older ones as their titles (the full entries stay in the run's memory file, named), with a note;
// a request that still cannot fit ends the run before it is sent, naming what is too long.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { runPrescan } from "../../runner/agents/prescan.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { formatEntry, type MemoryEntry } from "../../runner/memory/entries.ts";
import { failureMemoryBody } from "../../runner/run/session/memory-writes.ts";
import { parseSamString } from "../../runner/sam/parse.ts";
import { sent } from "../attack/a41c-pass.ts";
import { calls, writeScript } from "../llm/helpers.ts";

let model: Gateway | undefined;
afterEach(async () => {
  await model?.close();
});

const SAM = "---\nname: night\n---\n# Night\n\n## To-do\nFit the spectra.\n\n## Expectation\n- Fitted.\n";

/** What a failed iteration writes into task memory, as the runner writes it. */
function failedIteration(i: number): string {
  const check = (n: number) => ({
    id: `check-${n}`,
    itemId: `e${n}`,
    command: `python3 verify_${n}.py`,
    passed: false,
    exitCode: 1,
    timedOut: false,
    output: Array.from(
      { length: 20 },
      (_, l) => `line ${l}: residual ${(l * 0.37).toFixed(4)} above tolerance 0.0010 at bin ${l * 17}`,
    ).join("\n"),
  });
  const entry: MemoryEntry = {
    id: `r1/it${i}/review`,
    time: "2026-12-04T03:00:00.000Z",
    runId: "r1",
    role: "review",
    title: `Iteration ${i}: review failed root`,
    body: failureMemoryBody({
      node: { id: "root", title: "Night" },
      iteration: i,
      direction: "refit with a wider prior",
      work: {
        exit: "done",
        claim: "The fit converges and the residuals are within tolerance.",
        summary: "Refitted every spectrum with the wider prior; residuals printed per bin. ".repeat(110),
      } as never,
      failedChecks: [check(1), check(2), check(3)],
      verdict: { findings: ["The residuals are above tolerance in bins 0-340."], fixes: ["Refit."] },
    }),
  };
  return formatEntry(entry);
}

it("a41c: the pre-scan of iteration 10 on a 32k-token model is kept inside its window (scripted)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "a41c-prescan-"));
  const parsed = parseSamString(SAM, join(dir, "task.md"));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  const tape = join(dir, "audit.jsonl");
  const file = writeScript(
    [
      "context_window: 32768",
      "prescan:",
      '  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }',
    ].join("\n"),
  );
  model = (await createModel(`scripted:${file}`, new AuditTape(tape, { runId: "r1" }), {
    retry: { maxRetries: 0 },
  })) as Gateway;
  const memory = Array.from({ length: 9 }, (_, i) => failedIteration(i + 1)).join("");
  const outcome = await runPrescan(model, {
    root: parsed.sam.root,
    complete: new Set(),
    iteration: 10,
    rank: { min: 1, max: 3, suggested: 1 },
    controlRank: 1,
    taskMemory: { text: memory, ref: "memory:task:r1", sha256: "x" },
    groupMemory: undefined,
    history: "",
    skillIndex: "(none)",
    skillNames: [],
    meta: { runId: "r1" },
  }).then(
    (plan) => ({ plan, error: undefined }),
    (error: Error) => ({ plan: undefined, error }),
  );
  expect(outcome.error?.message).toBeUndefined();
  expect(outcome.plan?.node).toBe("root");
  const sentCalls = calls(tape);
  expect(sentCalls).toHaveLength(1);
  for (const call of sentCalls) expect(sent(call, "anthropic") + 8192).toBeLessThanOrEqual(32768);
  // The newest failure is there whole, the oldest by its title, and the prompt says where the rest is.
  const prompt = JSON.stringify(sentCalls[0]?.request.messages);
  expect(prompt).toContain("Iteration 9: review failed root");
  expect(prompt).toContain("### Iteration 1: review failed root (title only)");
  expect(prompt).toContain("memory.md in the run folder");
  expect(sentCalls[0]?.request.contextBudget).toBe(32768 - 8192);
});
