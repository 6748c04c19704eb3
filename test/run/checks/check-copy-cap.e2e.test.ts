// The checks' copy cap, end to end on Docker (the cap lowered to 1 MiB through
// SCIFI_CHECK_COPY_MAX_BYTES, as 16 GiB is not written in a test): a work pass that leaves the task
// folder over the cap ends the run failed with `checks_copy` and the precise reason, no check run
// and no PASS, although its answer is right; the same agent without the big file passes.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { readHistory } from "../../../runner/memory/history.ts";
import { runTask } from "../../../runner/run/setup.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { ensureImage } from "../harness.ts";

const TASK_MD = [
  "---",
  "name: copy-cap",
  "walltime: 5m",
  "iterations: 1",
  "---",
  "# The answer",
  "",
  "## To-do",
  "Write 42 into `answer.txt`.",
  "",
  "## Expectation",
  "- `answer.txt` holds 42.",
  "  ```check timeout=1m",
  '  test "$(cat answer.txt)" = 42',
  "  ```",
  "",
].join("\n");

function agent(big: boolean): string {
  const command = `echo 42 > answer.txt${big ? " && head -c 2097152 /dev/urandom > big.bin" : ""}`;
  return stringify({
    prescan: [{ json: { node: "root", rank: 1, skills: [], context: "", plan: "p", direction: "d" } }],
    work: [
      { tool_calls: [{ name: "bash", input: { command } }] },
      { tool_calls: [{ name: "report_done", input: { claim: "done", summary: "done" } }] },
    ],
    review: [
      {
        json: {
          items: [{ id: "root/e1", pass: true, evidence: "-" }],
          findings: [],
          fixes: [],
          rank_adjustment: 0,
        },
      },
    ],
    final_review: [{ json: { group_suggestions: [], global_suggestions: [] } }],
  });
}

async function run(big: boolean) {
  const root = mkdtempSync(join(tmpdir(), "scifi-copy-cap-e2e-"));
  mkdirSync(join(root, "home"));
  mkdirSync(join(root, "task"));
  writeFileSync(join(root, "task", "task.md"), TASK_MD);
  writeFileSync(join(root, "agent.yaml"), agent(big));
  const result = await runTask({
    home: join(root, "home"),
    task: join(root, "task", "task.md"),
    backend: "docker",
    model: `scripted:${join(root, "agent.yaml")}`,
    limits: { walltimeSec: 240, bashTimeoutSec: 30 },
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
  });
  return { result, history: readHistory(join(result.dir, "history.jsonl")) };
}

describe.skipIf(!hasEngine("docker"))(
  "the checks' copy cap (docker, scripted agent)",
  { timeout: 240_000 },
  () => {
    const before = process.env.SCIFI_CHECK_COPY_MAX_BYTES;
    const view = process.env.SCIFI_CHECK_VIEW;
    beforeAll(() => {
      ensureImage();
      process.env.SCIFI_CHECK_COPY_MAX_BYTES = String(1024 ** 2);
      // The cap is the copy's (an overlay view copies nothing): the view a site without overlays gets.
      process.env.SCIFI_CHECK_VIEW = "copy";
    }, 1_800_000);
    afterAll(() => {
      if (before === undefined) delete process.env.SCIFI_CHECK_COPY_MAX_BYTES;
      else process.env.SCIFI_CHECK_COPY_MAX_BYTES = before;
      if (view === undefined) delete process.env.SCIFI_CHECK_VIEW;
      else process.env.SCIFI_CHECK_VIEW = view;
    });

    it("control: under the cap, the right answer passes", async () => {
      const { result } = await run(false);
      expect(result.outcome.status, result.outcome.reason).toBe("passed");
    });

    it("over the cap: failed with checks_copy and the precise reason, no check run, no PASS", async () => {
      const { result, history } = await run(true);
      expect(result.outcome.status).toBe("failed");
      expect(result.outcome.reason).toBe(
        "checks: the task folder takes more than 1 MiB on disk (allocated blocks, holes not counted; reached at big.bin), so the checks cannot have a copy of it of their own and none runs. Keep large data outside the task folder, in a declared mount (SAM `mounts:`, read-only in the checks)",
      );
      expect(history.filter((e) => e.type === "check")).toEqual([]);
      expect(history.find((e) => e.type === "limit" && e.limit === "checks_copy")).toBeDefined();
    });
  },
);
