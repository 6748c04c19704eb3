// One budget across a crash: `scifi run` is SIGKILLed while a priced call is in flight, then
// resumed. The resumed run continues from what the tape says was spent (not from the last
// checkpoint, not from zero), stops at the SAM's budget, and its state's spend equals the tape's.
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spentOnTape } from "../../../runner/audit/spent.ts";
import type { ScriptedServer } from "../../../runner/llm/scripted/server.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { ensureImage, fixture, killChild, REPO, waitFor, workspace } from "../harness.ts";

const exec = promisify(execFile);
let server: ScriptedServer | undefined;

describe.skipIf(!hasEngine("docker"))("budget across SIGKILL and --resume (docker, scripted model)", () => {
  beforeAll(async () => {
    ensureImage();
    const { ScriptedServer } = await import("../../../runner/llm/scripted/server.ts");
    server = await ScriptedServer.start(fixture("budget-priced.yaml"));
  }, 1_800_000);
  afterAll(async () => {
    await server?.close();
  });

  it("a run killed mid-call resumes from the spend on its tape and stops at its budget", async () => {
    const { ws, models } = pricedTask(server?.baseURL ?? "", 0.05);
    const env = { ...process.env, SCIFI_HOME: ws.home };
    const scifi = join(REPO, "bin/scifi.js");
    const first = spawn(process.execPath, [scifi, "run", ws.sam, "--models-config", models], {
      env,
      stdio: "ignore",
    });
    const runDir = await waitFor(() => {
      const runs = existsSync(join(ws.home, "runs")) ? readdirSync(join(ws.home, "runs")) : [];
      return runs[0] ? join(ws.home, "runs", runs[0]) : undefined;
    });
    const tape = join(runDir, "audit.jsonl");
    // Pre-scan and two work calls are on the tape; the third work call is in flight (slow reply).
    await waitFor(() => (spentOnTape(tape).calls >= 3 ? true : undefined));
    await new Promise((r) => setTimeout(r, 1500));
    await killChild(first);
    const killedAt = JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as {
      spent: { usd: number; elapsedMs: number; at: string };
    };
    const tapeBefore = spentOnTape(tape);
    expect(tapeBefore.usd).toBeCloseTo(0.03, 9);
    expect(killedAt.spent.usd).toBeLessThan(tapeBefore.usd); // the checkpoint was behind the tape

    const runId = runDir.split("/").at(-1) ?? "";
    const resumed = await exec(
      process.execPath,
      [scifi, "run", "--resume", runId, "--models-config", models],
      { env, timeout: 300_000 },
    ).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
    );
    expect(resumed.code, resumed.out).toBe(1);
    expect(resumed.out).toMatch(/budget/i);
    const state = JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as {
      outcome: { status: string; reason: string };
      spent: { usd: number; elapsedMs: number };
    };
    const tapeAfter = spentOnTape(tape);
    expect(state.outcome.status).toBe("failed");
    expect(state.outcome.reason).toMatch(/budget/);
    // One count: the state says what the tape says, and the run stopped at its budget.
    expect(state.spent.usd).toBeCloseTo(tapeAfter.usd, 9);
    expect(tapeAfter.usd).toBeCloseTo(0.05, 9);
    // The time the first process ran after its checkpoint is not lost (up to its last record).
    const ranOn = Date.parse(tapeBefore.lastTime ?? "") - Date.parse(killedAt.spent.at);
    expect(ranOn).toBeGreaterThan(0);
    expect(state.spent.elapsedMs).toBeGreaterThanOrEqual(killedAt.spent.elapsedMs + ranOn);
  }, 600_000);

  for (const phase of ["prescan", "checks", "review"] as const) {
    it(`a run killed in its ${phase} phase resumes with the state's spend equal to the tape's`, async () => {
      const { ScriptedServer } = await import("../../../runner/llm/scripted/server.ts");
      const root = mkdtempSync(join(tmpdir(), "scifi-budget-phase-"));
      const own = await ScriptedServer.start(pricedScript(root, phase === "checks" ? "none" : phase));
      try {
        const { ws, models } = pricedTask(own.baseURL, 1);
        // One iteration: the agent does not fix the counter, so the checks fail and the run ends.
        writeFileSync(ws.sam, readFileSync(ws.sam, "utf8").replace(/^iterations: \d+$/m, "iterations: 1"));
        const env = { ...process.env, SCIFI_HOME: ws.home };
        const scifi = join(REPO, "bin/scifi.js");
        const first = spawn(process.execPath, [scifi, "run", ws.sam, "--models-config", models], {
          env,
          stdio: "ignore",
        });
        const runDir = await waitFor(() => {
          const runs = existsSync(join(ws.home, "runs")) ? readdirSync(join(ws.home, "runs")) : [];
          return runs[0] ? join(ws.home, "runs", runs[0]) : undefined;
        });
        const history = join(runDir, "history.jsonl");
        const events = () => (existsSync(history) ? readFileSync(history, "utf8") : "");
        // In the phase: the slow pre-scan reply, the checks (a Verilator build), the slow review reply.
        const inPhase = {
          prescan: () => events().includes('"iteration_start"'),
          checks: () => events().includes('"work_end"'),
          review: () => (events().match(/"type":"check"/g) ?? []).length >= 2,
        }[phase];
        await waitFor(() => (inPhase() ? true : undefined));
        await new Promise((r) => setTimeout(r, 1000));
        await killChild(first);
        const runId = runDir.split("/").at(-1) ?? "";
        const resumed = await exec(
          process.execPath,
          [scifi, "run", "--resume", runId, "--models-config", models],
          { env, timeout: 300_000 },
        ).then(
          (r) => ({ code: 0, out: r.stdout }),
          (e: { code: number; stdout: string; stderr: string }) => ({
            code: e.code,
            out: e.stdout + e.stderr,
          }),
        );
        expect(resumed.code, resumed.out).toBe(1);
        expect(resumed.out).toMatch(/^FAILED: iteration limit reached/);
        const state = JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as {
          spent: { usd: number };
        };
        const tape = spentOnTape(join(runDir, "audit.jsonl"));
        expect(state.spent.usd).toBeCloseTo(tape.usd, 9);
        expect(tape.usd).toBeGreaterThan(0);
      } finally {
        await own.close();
      }
    }, 600_000);
  }
});

/** The verilator example, runnable by any command, with a budget, and a models config for `baseURL`. */
function pricedTask(
  baseURL: string,
  budgetUsd: number,
): { ws: ReturnType<typeof workspace>; models: string } {
  const ws = workspace("verilator-counter-debug");
  const sam = readFileSync(ws.sam, "utf8")
    .replace(/^allow_commands: .*\n/m, "")
    .replace(/^rank: .*\n/m, "")
    .replace(/^budget_usd: .*$/m, `budget_usd: ${budgetUsd}`);
  writeFileSync(ws.sam, sam);
  const models = join(ws.root, "models.yaml");
  writeFileSync(
    models,
    [
      "# Scripted models (labelled): a priced scripted server, 10 USD per million input tokens.",
      "models:",
      "  - name: scripted-priced",
      "    provider: anthropic",
      "    model: scripted-budget",
      `    baseURL: ${baseURL}`,
      "    rank: 1",
      "    kinds: [control, work]",
      "    prices: { input: 10, output: 0, cacheWrite: 0, cacheRead: 0 }",
      "    noApiKey: true",
      "retry: { maxRetries: 0 }",
      "",
    ].join("\n"),
  );
  return { ws, models };
}

/** A priced script (USD 0.01 a call) whose first reply for `slow` takes 4 s. */
function pricedScript(dir: string, slow: "prescan" | "review" | "none"): string {
  const usage = "    usage: { input: 1000, output: 0, cache_write: 0, cache_read: 0 }";
  const delay = (role: string) => (slow === role ? ["    delay_ms: 4000"] : []);
  const file = join(dir, `priced-${slow}.yaml`);
  writeFileSync(
    file,
    [
      "# Scripted (priced through a models config): pre-scan, one command, done, a passing review.",
      // A reply whose call was in flight when the runner died is asked for again by the resume.
      "prescan:",
      ...[1, 2].flatMap((n) => [
        '  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }',
        usage,
        ...(n === 1 ? delay("prescan") : []),
      ]),
      "work:",
      '  - tool_calls: [{ name: bash, input: { command: "echo one" } }]',
      usage,
      '  - tool_calls: [{ name: report_done, input: { claim: "done", summary: "done" } }]',
      usage,
      "review:",
      ...[1, 2].flatMap((n) => [
        "  - json:",
        "      items:",
        '        - { id: root/e1, pass: true, evidence: "-" }',
        '        - { id: root/e2, pass: true, evidence: "-" }',
        "      findings: []",
        "      fixes: []",
        "      rank_adjustment: 0",
        usage,
        ...(n === 1 ? delay("review") : []),
      ]),
      "final_review:",
      "  - json: { group_suggestions: [], global_suggestions: [] }",
      usage,
      "",
    ].join("\n"),
  );
  return file;
}
