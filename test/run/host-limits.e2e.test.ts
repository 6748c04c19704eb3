// Limits the agent's files and commands cannot talk their way around, through the whole loop: the
// task-folder quota (a run whose agent leaves the folder over it ends failed) and the wall time
// (a command still running at the deadline is killed in the sandbox, and the run ends).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readHistory } from "../../runner/memory/history.ts";
import { runTask } from "../../runner/run/setup.ts";
import { readState } from "../../runner/run-folder/state.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, workspace } from "./harness.ts";

/** A scripted model (a fixture written for this test): the work agent runs `command`, then claims done. */
function script(command: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "scifi-limits-script-")), "script.yaml");
  writeFileSync(
    file,
    [
      "# Scripted: the work agent runs one command and claims done.",
      "prescan:",
      '  - json: { node: root, rank: 2, skills: [], context: "", plan: "p", direction: "d" }',
      "work:",
      "  - tool_calls:",
      "      - name: bash",
      `        input: { command: ${JSON.stringify(command)} }`,
      "  - tool_calls:",
      "      - name: report_done",
      '        input: { claim: "done", summary: "done" }',
      "review:",
      "  - json:",
      "      items:",
      '        - { id: root/e1, pass: true, evidence: "-" }',
      '        - { id: root/e2, pass: true, evidence: "-" }',
      "      findings: []",
      "      fixes: []",
      "      rank_adjustment: 0",
      "final_review:",
      "  - json: { group_suggestions: [], global_suggestions: [] }",
      "",
    ].join("\n"),
  );
  return file;
}

/** The verilator example without its command allowlist (the agent's command must run). */
function task(): ReturnType<typeof workspace> {
  const ws = workspace("verilator-counter-debug");
  writeFileSync(ws.sam, readFileSync(ws.sam, "utf8").replace(/^allow_commands: .*\n/m, ""));
  return ws;
}

describe.skipIf(!hasEngine("docker"))("host-side limits through the loop (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("an agent that fills the task folder past the site's quota ends the run failed", async () => {
    const ws = task();
    const site = join(ws.root, "site-policy.yaml");
    writeFileSync(site, "maxTaskFolder: 16M\n");
    const result = await runTask({
      home: ws.home,
      task: ws.sam,
      backend: "docker",
      sitePolicy: site,
      model: `scripted:${script("dd if=/dev/zero of=big.bin bs=1M count=64 2>&1; sync; ls -la big.bin")}`,
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    });
    expect(result.outcome.status).toBe("failed");
    expect(result.outcome.reason).toMatch(/^task-folder quota: /);
    const history = readHistory(join(result.dir, "history.jsonl"));
    expect(history.find((e) => e.type === "limit" && e.limit === "quota")).toBeDefined();
    expect(history.some((e) => e.type === "check")).toBe(false);
    // The run records the policy it ran under, which `scifi ctl` judges a raise against.
    expect(readState(join(result.dir, "state.json")).sitePolicyFile).toBe(site);
  }, 300_000);

  it("a command still running at the run's wall-time deadline is killed, and the run ends on wall time", async () => {
    const ws = task();
    writeFileSync(ws.sam, readFileSync(ws.sam, "utf8").replace(/^walltime: .*$/m, "walltime: 15s"));
    const started = Date.now();
    const result = await runTask({
      home: ws.home,
      task: ws.sam,
      backend: "docker",
      model: `scripted:${script("sleep 240; echo woke")}`,
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    });
    expect(Date.now() - started).toBeLessThan(90_000);
    expect(result.outcome.status).toBe("failed");
    expect(result.outcome.reason).toContain("wall time limit reached (15 s)");
  }, 300_000);
});
