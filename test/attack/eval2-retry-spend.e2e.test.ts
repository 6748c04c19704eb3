// Attack on the cost numbers of `scifi eval` (attacker session eval2, written from docs/eval.md).
// Promise (docs/eval.md, summary.json): a cell's `usd` is "spent by every trial of the group,
// errors included: they were paid for", and `usdPerPass` = usd / passes; `budget.spentUsd` is
// "what the results spent"; `--retry-errors` "also runs the trials whose result is `error`; the
// old error result stays until the new result replaces it".
// What the agent (here: a priced model whose provider is overloaded in the review) did: the trial
// spent USD 0.03 (prescan and two work calls, 1000 input tokens each at 10 USD per million), then
// every review call got a 529: the trial is `error` (cause model), result usd 0.03, summary usd 0.03.
// `scifi eval --resume <id> --retry-errors` runs it again; the retry passes and spends 0.05.
// What happened: the retry's result replaces the error's, and with it the error's 0.03: the
// summary says usd 0.05, usdPerPass 0.05, spentUsd 0.05, while the provider was paid 0.08 (both
// runs' state.json say so). A model whose calls often end in an outage (or an agent that keeps the
// provider busy past the call timeout, which reads as one) looks cheaper per pass than it is, by
// everything its errored attempts cost, and an eval's budget check undercounts by as much.
// Fixed: every run a trial starts is listed in trials/<id>/attempts.jsonl; a trial's `usd` is what
// all its attempts cost (tapes), and its result lists the earlier ones under `earlier`.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { resumeEval, runEval } from "../../runner/eval/engine.ts";
import { ScriptedServer } from "../../runner/llm/scripted/server.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { outTxtTask } from "./out-txt-task.ts";

const TASK = outTxtTask("eval-retry-spend");

const U = "    usage: { input: 1000, output: 0, cache_write: 0, cache_read: 0 }\n";
const PRESCAN = `  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }\n${U}`;
const WORK =
  `  - tool_calls: [{ name: bash, input: { command: "echo ok > out.txt" } }]\n${U}` +
  `  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]\n${U}`;
const REVIEW_OK = `  - json: { items: [{ id: root/e1, pass: true, evidence: "out.txt" }], findings: [], fixes: [], rank_adjustment: 0 }\n${U}`;
const FINAL = `  - json: { group_suggestions: [], global_suggestions: [] }\n${U}`;
// Attempt 1: prescan, work, work (0.03), then the review is overloaded -> error.
// Attempt 2 (the retry): prescan, work, work, review, final review (0.05) -> pass.
const SCRIPT =
  `prescan:\n${PRESCAN}${PRESCAN}work:\n${WORK}${WORK}` +
  `review:\n  - { status: 529, message: "Overloaded" }\n${REVIEW_OK}` +
  `final_review:\n${FINAL}${FINAL}`;

describe.skipIf(!hasEngine("docker"))("scifi eval --retry-errors: what the errored attempt spent", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("stays in the cell's USD and the budget's spentUsd after the retry replaces its result", async () => {
    const root = mkdtempSync(join(tmpdir(), "eval2-retry-spend-"));
    mkdirSync(join(root, "tasks", "spend"), { recursive: true });
    writeFileSync(join(root, "tasks", "spend", "task.md"), TASK);
    writeFileSync(join(root, "priced.yaml"), SCRIPT);
    const server = await ScriptedServer.start(join(root, "priced.yaml"));
    try {
      writeFileSync(
        join(root, "models.yaml"),
        [
          "models:",
          "  - name: scripted-priced",
          "    provider: anthropic",
          "    model: scripted-priced",
          `    baseURL: ${server.baseURL}`,
          "    rank: 1",
          "    kinds: [control, work]",
          "    prices: { input: 10, output: 0, cacheWrite: 0, cacheRead: 0 }",
          "    noApiKey: true",
          "retry: { maxRetries: 0 }",
          "",
        ].join("\n"),
      );
      writeFileSync(
        join(root, "suite.yaml"),
        "tasks: [tasks/spend]\nmodels: [{ name: priced, spec: models.yaml }]\nrepeats: 1\nconcurrency: 1\n",
      );
      const home = join(root, "home");
      mkdirSync(home);
      const retry = { maxRetries: 0, baseDelayMs: 1 };
      const first = await runEval({ home, suite: join(root, "suite.yaml"), retry });
      expect(first.summary.trials).toMatchObject({ error: 1, pass: 0 });
      expect(first.summary.groups[0]?.usd).toBeCloseTo(0.03, 9);

      const evalId = first.summary.evalId;
      const again = await resumeEval({ home, evalId, retryErrors: true, retry });
      expect(again.summary.trials).toMatchObject({ pass: 1, error: 0 });

      // What the provider was paid, by the runs' own state (both runs are the trial's attempts).
      const runs = readdirSync(join(home, "runs"));
      expect(runs).toHaveLength(2);
      const paid = runs
        .map(
          (r) =>
            (
              JSON.parse(readFileSync(join(home, "runs", r, "state.json"), "utf8")) as {
                spent: { usd: number };
              }
            ).spent.usd,
        )
        .reduce((a, b) => a + b, 0);
      expect(paid).toBeCloseTo(0.08, 9);

      // Before a fix: 0.05 each (the errored attempt's 0.03 is gone with its result).
      const g = again.summary.groups[0];
      expect(g?.usd).toBeCloseTo(paid, 9);
      expect(g?.usdPerPass).toBeCloseTo(paid, 9);
      expect(again.summary.budget.spentUsd).toBeCloseTo(paid, 9);
      const { readResults } = await import("../../runner/eval/summary-files.ts");
      const { readPlan } = await import("../../runner/eval/plan.ts");
      const [result] = [...readResults(again.evalDir, readPlan(again.evalDir)).values()];
      expect(result?.earlier).toEqual([
        expect.objectContaining({ ending: "error", usd: expect.closeTo(0.03, 9) }),
      ]);
      expect(result?.earlier?.[0]?.cause).toMatch(/no model/i);
    } finally {
      await server.close();
    }
  }, 600_000);
});
