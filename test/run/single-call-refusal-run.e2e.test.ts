// A whole run (Docker, a scripted model labelled scripted) whose pre-scan the provider refuses as too
// long: the runner builds the brief again under 80 % of the refused request's estimate and sends it
// once more (runner/agents/refused-brief.ts); the run goes on, and its history records the retry as
// a pass's is (a `context` event, `retried`, naming the pre-scan), the tape both requests.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../runner/audit/types.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "./harness.ts";

const SAM =
  "---\nname: refused-prescan\niterations: 2\n---\n# Refused pre-scan\n\n## To-do\nSay done.\n\n## Expectation\n- Done.\n";

const PLAN = '  - json: { node: root, rank: 1, skills: [], context: "", plan: "say done", direction: "d" }';
const REFUSAL = '  - { status: 400, message: "prompt is too long: 40000 tokens > 32768 maximum" }';
const LONG = "I checked every input and wrote the notes for each file; ".repeat(60);

/** Iteration 1 fails its review (a task-memory entry), iteration 2's pre-scan is refused once. */
const SCRIPT = [
  "context_window: 32768",
  "prescan:",
  PLAN,
  REFUSAL,
  PLAN,
  "work:",
  `  - tool_calls: [{ name: report_done, input: { claim: ${JSON.stringify(LONG)}, summary: ${JSON.stringify(LONG)} } }]`,
  '  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "s" } }]',
  "review:",
  "  - json: { items: [{ id: root/e1, pass: false, evidence: not yet }], findings: [not yet], fixes: [say done], rank_adjustment: 0 }",
  "  - json: { items: [{ id: root/e1, pass: true, evidence: done }], findings: [], fixes: [], rank_adjustment: 0 }",
  "final_review:",
  "  - json: { group_suggestions: [], global_suggestions: [] }",
].join("\n");

describe.skipIf(!hasEngine("docker"))(
  "a single call refused for length in a run (docker)",
  { timeout: 300_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("the pre-scan is sent again shorter, the run passes, the history and tape say so", async () => {
      const root = mkdtempSync(join(tmpdir(), "single-call-refusal-"));
      mkdirSync(join(root, "home"));
      mkdirSync(join(root, "task"));
      writeFileSync(join(root, "task", "task.md"), SAM);
      writeFileSync(join(root, "script.yaml"), SCRIPT);
      const result = await runTask({
        home: join(root, "home"),
        task: join(root, "task", "task.md"),
        backend: "docker",
        model: `scripted:${join(root, "script.yaml")}`,
        retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      });
      expect(result.outcome.status).toBe("passed");
      const retried = readHistory(join(result.dir, "history.jsonl")).filter((e) => e.type === "context");
      expect(retried).toEqual([
        expect.objectContaining({ iteration: 2, action: "retried", role: "prescan", elided: 0 }),
      ]);
      const prescans = readTape(join(result.dir, "audit.jsonl")).filter(
        (r): r is CallRecord => r.kind === "call" && r.role === "prescan",
      );
      expect(prescans.map((c) => c.error?.name ?? "ok")).toEqual(["ok", "ContextTooLong", "ok"]);
      const budgets = prescans.map((c) => c.request.contextBudget ?? 0);
      expect(budgets[2]).toBeLessThan(budgets[1] ?? 0);
      expect(retried[0]).toMatchObject({ budget: budgets[2] });
      // The retry showed iteration 1's entry by its title: the memory file keeps it whole.
      expect(JSON.stringify(prescans[1]?.request.messages)).not.toContain("(title only)");
      expect(JSON.stringify(prescans[2]?.request.messages)).toContain(
        "Iteration 1: review failed root (title only)",
      );
    });
  },
);
