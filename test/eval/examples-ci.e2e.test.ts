// The shipped suite's CI cut (evals/examples/ci.yaml) run as a scientist would, through the CLI in
// real Docker sandboxes: 3 tasks x 3 description levels x 2 scripted models (the oracle that writes
// every known answer, `idle` that does nothing), 1 repeat. Known in advance: the oracle passes all
// 9 trials, idle fails all 9, nothing is an infrastructure error, the paired comparison finds the
// oracle better, and the page links every trial's run report.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { evalFiles } from "../../runner/eval/plan.ts";
import type { EvalSummary } from "../../runner/eval/summary.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../run/harness.ts";

describe.skipIf(!hasEngine("docker"))("the shipped example suite, CI cut (docker, scripted models)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("scifi eval evals/examples/ci.yaml: the oracle passes all 9 trials, idle none, no error", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-examples-ci-"));
    mkdirSync(home, { recursive: true });
    const ran = await runScifi(
      home,
      ["eval", join(REPO, "evals", "examples", "ci.yaml"), "--backend", "docker"],
      900_000,
    );
    expect(ran.stderr).not.toMatch(/Error:/);
    const [evalId] = readdirSync(join(home, "evals"));
    const evalDir = join(home, "evals", evalId as string);
    const summary = JSON.parse(readFileSync(evalFiles(evalDir).summary, "utf8")) as EvalSummary;
    expect(summary.trials).toEqual({ planned: 18, pass: 9, fail: 9, error: 0, pending: 0 });
    expect(summary.variants).toEqual(["ex", "nl", "st"]);
    const byModel = Object.fromEntries(summary.byModel.map((m) => [m.model, m]));
    expect(byModel.oracle).toMatchObject({ n: 9, passes: 9, passRate: 1, scripted: true });
    expect(byModel.idle).toMatchObject({ n: 9, passes: 0, passRate: 0, scripted: true });
    for (const level of summary.byVariant) expect(level).toMatchObject({ n: 6, passes: 3 });
    expect(summary.comparisons).toMatchObject([{ better: "oracle", cells: 9, meanDifference: 1 }]);
    // Every trial is a real run: its run folder, its tape head and, on the page, its report's link.
    const page = readFileSync(join(evalDir, "report.html"), "utf8");
    for (const id of readdirSync(evalFiles(evalDir).trials)) {
      const result = JSON.parse(readFileSync(evalFiles(evalDir).result(id), "utf8")) as TrialResult;
      expect(result.status, id).toBe(id.includes(".oracle.") ? "pass" : "fail");
      expect(existsSync(join(result.runDir, "audit.jsonl")), id).toBe(true);
      expect(result.tapeHead, id).toMatch(/^[0-9a-f]{64}$/);
      expect(page).toContain(`data-trial="${id}"`);
    }
  }, 960_000);
});
