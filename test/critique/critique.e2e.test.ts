// The critique phase end to end on Docker (scripted tracer and critique, labelled scripted): the
// lhco-dijet-selection example with a veto on all jets instead of the selected ones passes its check
// and its review; the critique's definition mismatch, verified on the code, sends it back under
// `critique: block` and the fixed code passes; under `critique: approve` the PASS waits for a person.
// The tracer runs in its own sandbox, which sees the task folder read-only.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { decide, pendingApprovals } from "../../runner/approval/store.ts";
import { readTape } from "../../runner/audit/verify.ts";
import type { CritiqueRecord } from "../../runner/critique/schema.ts";
import { runCritiqueCommand } from "../../runner/helpers/critique/command.ts";
import { writeRunReport } from "../../runner/report/report.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, runScripted, workspace } from "../run/harness.ts";

function withMode(sam: string, mode: string): void {
  writeFileSync(
    sam,
    readFileSync(sam, "utf8").replace("skills: [lhco]\n", `skills: [lhco]\ncritique: ${mode}\n`),
  );
}

function record(dir: string, iteration: number): CritiqueRecord {
  return JSON.parse(readFileSync(join(dir, "critique", `it${iteration}.json`), "utf8")) as CritiqueRecord;
}

describe.skipIf(!hasEngine("docker"))("critique phase on Docker (scripted)", { timeout: 240_000 }, () => {
  beforeAll(() => ensureImage());

  it("block: the verified definition mismatch goes back to the work agent, and the fix passes", async () => {
    const ws = workspace("lhco-dijet-selection");
    withMode(ws.sam, "block");
    const { result, history } = await runScripted(ws, "lhco-critique-block.yaml");
    expect(result.outcome).toEqual({ status: "passed", reason: "every check and review item passed" });
    // Both iterations' checks (a run stage and a compare stage) passed: the check cannot tell the two vetoes apart.
    expect(history.flatMap((e) => (e.type === "check" ? [e.passed] : []))).toEqual([true, true, true, true]);
    const critiques = history.flatMap((e) => (e.type === "critique" ? [e] : []));
    expect(critiques.map((c) => [c.iteration, c.effect, c.mode])).toEqual([
      [1, "sent_back", "block"],
      [2, "none", "block"],
    ]);
    expect(critiques[0]?.packs).toEqual(["lhco"]);
    const ends = history.flatMap((e) => (e.type === "iteration_end" ? [[e.passed, e.reason]] : []));
    expect(ends[0]).toEqual([false, "critique: the critique found a likely mismatch (critique: block)"]);
    const first = record(result.dir, 1);
    const mismatch = first.findings[0];
    expect(mismatch).toMatchObject({
      type: "definition_mismatch",
      severity: "likely_mismatch",
      verified: true,
    });
    expect(mismatch?.citations[0]).toMatchObject({
      verified: true,
      lines: [{ n: 39, text: '    if any(j["btag"] > 0 for j in jets):' }],
    });
    // An unverified likely mismatch (its only citation is not on its line) did not block.
    expect(first.findings[2]).toMatchObject({ severity: "likely_mismatch", verified: false });
    // The trace's citation of line 12 does not hold the expression: flagged.
    expect(first.traceChecks["item:root/t5"]?.map((c) => c.verified)).toEqual([true, false]);
    // The tracer has no bash (the agent's code never runs where it is judged): its touch was refused.
    const tape = readTape(join(result.dir, "audit.jsonl"), { tolerant: true });
    const tracer = tape.filter((r) => r.kind === "call" && r.role === "tracer");
    expect(JSON.stringify(tracer[1])).toContain(
      "Unknown tool 'bash'. Available tools: read_file, glob, grep.",
    );
    expect(readdirSync(ws.taskDir)).not.toContain("tracer-probe");
    expect(tape.filter((r) => r.kind === "event" && r.event === "critique")).toHaveLength(2);
    expect(readFileSync(join(ws.taskDir, "analysis.py"), "utf8")).toContain("for j in selected):");
    expect(record(result.dir, 2).findings.map((f) => f.severity)).toEqual(["low"]);
    // The report: the Critique section, every model text escaped.
    const page = readFileSync(
      writeRunReport(join(result.dir, "audit.jsonl"), join(result.dir, "report.html")).file,
      "utf8",
    );
    expect(page).toContain('id="critique"');
    expect(page).toContain("definition_mismatch");
    expect(page).toContain("&lt;script&gt;alert(&#39;trace&#39;)&lt;/script&gt;");
    expect(page).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(page).not.toContain("<script>alert(");
    expect(page).not.toContain("\u001b");
  });

  it("approve: a PASS with a likely mismatch waits for a person, then passes", async () => {
    const ws = workspace("lhco-dijet-selection");
    withMode(ws.sam, "approve");
    process.env.SCIFI_APPROVAL_POLL_MS = "100";
    let approved: { action: string; detail: string } | undefined;
    const decider = setInterval(() => {
      for (const view of pendingApprovals(ws.home)) {
        approved = { action: view.request.action, detail: view.request.detail };
        decide(ws.home, view.runId, view.request.id, true, "the all-jets veto is intended");
      }
    }, 200);
    try {
      const { result, history } = await runScripted(ws, "lhco-critique-one.yaml");
      expect(result.outcome.status).toBe("passed");
      expect(approved?.action).toBe("critique");
      expect(approved?.detail).toContain("definition_mismatch at root/t4 (analysis.py:39, analysis.py:35)");
      expect(history.flatMap((e) => (e.type === "approval" ? [e.state] : []))).toEqual([
        "requested",
        "approved",
      ]);
      expect(history.find((e) => e.type === "critique")).toMatchObject({ effect: "approved" });
      // The lhco pack's helpers: offered with the skill, mounted read-only in the work sandbox.
      const tape = JSON.stringify(readTape(join(result.dir, "audit.jsonl"), { tolerant: true }));
      expect(tape).toContain("Helper registry (mounted read-only at /opt/scifi/helpers/lhco)");
      expect(tape).toMatch(/lhco\.py[^"]*registry\.md/);
      expect(tape).toContain("touch: cannot touch '/opt/scifi/helpers/lhco/planted': Read-only file system");
      // `scifi critique <run>` on the finished run: a record of its own beside the run's, same finding.
      let text = "";
      let said = "";
      const code = await runCritiqueCommand(result.runId, {
        model: `scripted:${fixture("lhco-critique-one.yaml")}`,
        env: { ...process.env, SCIFI_HOME: ws.home },
        out: (t) => (text += t),
        err: (t) => (said += t),
      });
      expect(code, said).toBe(0);
      expect(text).toContain("likely_mismatch definition_mismatch at root/t4");
      expect(text).toContain("verified analysis.py:39");
      expect(said).toContain("critique: 1 likely mismatch(es) verified on the code, 1 unverified finding(s)");
      expect(readdirSync(join(result.dir, "critique")).sort()).toEqual(["after1.json", "it1.json"]);
    } finally {
      clearInterval(decider);
      delete process.env.SCIFI_APPROVAL_POLL_MS;
    }
  });
});
