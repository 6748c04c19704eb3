// Attack round 32 (A32-6), a real run on Docker (the same wiring as `scifi run`, scripted model,
// labelled scripted): after the final review the runner renders the first page of each PDF the run
// made, in a fresh sandbox, 60 s each, up to 5 PDFs, before it prints the outcome. Five 20 KiB PDFs
// whose page draws a compressed 4000x4000 image 3000 times (test/attack32/slow-pdf.py) keep each
// pdftoppm busy to its timeout: measured 306 s between the final review and the outcome, in a run
// whose summary says "4 s", and the same in a run with `walltime: 1m`. The secure behaviour asserted:
// the run ends within its wall time (plus 30 s of slack), whatever the agent's PDFs are.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";

const SAM = `---
name: a32-pdf
iterations: 1
walltime: 1m
budget_usd: 1
---
# Write a note

## To-do
Write \`note.txt\`.

## Expectation
- note.txt exists.
  \`\`\`check timeout=30s
  test -f note.txt
  \`\`\`
`;

const AGENT = `# Scripted model (labelled scripted): five slow PDFs, a note, done; the review passes.
prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "x", direction: "x" }
work:
  - tool_calls:
      - name: bash
        input: { command: "for i in 1 2 3 4 5; do python3 slow-pdf.py p$i.pdf 4000 3000; done; echo hi > note.txt" }
  - tool_calls:
      - name: report_done
        input: { claim: "done", summary: "done" }
review:
  - json: { items: [ { id: root/e1, pass: true, evidence: "ok" } ], findings: [], fixes: [], rank_adjustment: 0 }
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

let root = "";

describe.skipIf(!hasEngine("docker"))(
  "A32-6 the agent's PDFs and the end of the run (docker, real run)",
  () => {
    beforeAll(() => {
      ensureImage();
      root = mkdtempSync(join(tmpdir(), "scifi-a32-pdf-"));
    }, 1_800_000);
    afterAll(() => {
      if (root) rmSync(root, { recursive: true, force: true });
    });

    it("A32-6 five slow PDFs do not hold a 1-minute run past its wall time", async () => {
      const home = join(root, "home");
      const task = join(root, "task");
      mkdirSync(home);
      mkdirSync(task);
      writeFileSync(join(task, "task.md"), SAM);
      copyFileSync(join(import.meta.dirname, "slow-pdf.py"), join(task, "slow-pdf.py"));
      const agent = join(root, "agent.yaml");
      writeFileSync(agent, AGENT);
      const t0 = Date.now();
      const result = await runTask({
        home,
        task: join(task, "task.md"),
        backend: "docker",
        model: `scripted:${agent}`,
        retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      });
      const seconds = (Date.now() - t0) / 1000;
      console.log(
        `A32-6: the run took ${seconds.toFixed(0)} s (walltime 60 s), outcome ${result.outcome.status}`,
      );
      expect(result.outcome.status, result.outcome.reason).toBe("passed");
      expect(seconds, "the run outlived its wall time rendering the agent's PDFs").toBeLessThan(90);
    }, 600_000);
  },
);
