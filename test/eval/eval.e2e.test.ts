// `scifi eval` end to end in real Docker sandboxes with scripted models (labelled scripted) whose
// results are known in advance: `pass` passes every trial, `half` the even repeats (its scripts
// alternate), `never` none. The summary's counts, intervals, pass@k and comparisons are checked
// against hand-computed values; the eval is SIGKILLed at three points and resumed to the same
// summary as an uninterrupted eval, with no trial counted twice and only unfinished ones run again;
// a trial whose sandbox dies is an `error`, counted apart, and `--retry-errors` runs it again.
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { resumeEval, runEval } from "../../runner/eval/engine.ts";
import { type EvalPlan, evalFiles } from "../../runner/eval/plan.ts";
import type { EvalSummary } from "../../runner/eval/summary.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, killChild, waitFor } from "../run/harness.ts";
import { CLI, comparable, evalWorkspace, RETRY } from "./eval-workspace.ts";

const exec = promisify(execFile);

/** The summary without what differs between two evals of the same plan: ids, times, wall times. */

function results(evalDir: string): Map<string, TrialResult> {
  const out = new Map<string, TrialResult>();
  const dir = evalFiles(evalDir).trials;
  if (!existsSync(dir)) return out;
  for (const id of readdirSync(dir)) {
    const file = evalFiles(evalDir).result(id);
    if (existsSync(file)) out.set(id, JSON.parse(readFileSync(file, "utf8")) as TrialResult);
  }
  return out;
}

/** Kills, once each, the first `times` running containers whose name contains `part`. */
function killer(part: string, times: number): { stop(): void; killed: string[] } {
  const killed: string[] = [];
  const timer = setInterval(() => {
    if (killed.length >= times) return;
    const running = execFileSync("docker", ["ps", "--format", "{{.ID}} {{.Names}}"], { encoding: "utf8" })
      .split("\n")
      .map((line) => line.split(" "))
      .filter(([id, name]) => id && name?.includes(part) && !killed.includes(id));
    for (const [id] of running.slice(0, times - killed.length)) {
      try {
        execFileSync("docker", ["kill", id as string], { stdio: "ignore" });
        killed.push(id as string);
      } catch {
        // it ended by itself meanwhile
      }
    }
  }, 100);
  return { stop: () => clearInterval(timer), killed };
}

let active: ReturnType<typeof killer> | undefined;
afterEach(() => {
  active?.stop();
  active = undefined;
});

describe.skipIf(!hasEngine("docker"))("scifi eval (docker, scripted models)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("pass, half and never over two description levels: the statistics known in advance", async () => {
    const { root, home } = evalWorkspace("known");
    const outcome = await runEval({ home, suite: join(root, "suite.yaml"), retry: RETRY });
    const s = outcome.summary;
    expect(s.trials).toEqual({ planned: 12, pass: 6, fail: 6, error: 0, pending: 0 });
    expect(s.variants).toEqual(["nl", "st"]);
    for (const variant of ["nl", "st"]) {
      const cell = (model: string) => s.groups.find((g) => g.variant === variant && g.model === model);
      expect(cell("pass")).toMatchObject({
        n: 2,
        passes: 2,
        passRate: 1,
        usd: 0,
        usdPerPass: 0,
        scripted: true,
      });
      expect(cell("pass")?.wilson95[0]).toBeCloseTo(0.342372, 5); // 1 / 2.9208
      expect(cell("half")).toMatchObject({
        n: 2,
        passes: 1,
        fails: 1,
        passRate: 0.5,
        passAtK: { "1": 0.5, "2": 1 },
      });
      expect(cell("half")?.passHatK["2"]).toBe(0);
      expect(cell("half")?.wilson95[0]).toBeCloseTo(0.094529, 5);
      expect(cell("never")).toMatchObject({ n: 2, passes: 0, passRate: 0, usdPerPass: null });
      expect(cell("never")?.wilson95[1]).toBeCloseTo(0.657628, 5); // 1.9208 / 2.9208
      expect(cell("pass")?.iterations).toEqual({ n: 2, mean: 1, se: 0, median: 1 });
    }
    expect(s.byModel.map((m) => [m.model, m.passes, m.n])).toEqual([
      ["pass", 4, 4],
      ["half", 2, 4],
      ["never", 0, 4],
    ]);
    const pair = (a: string, b: string) => s.comparisons.find((c) => c.a === a && c.b === b);
    // 2/2 against 0/2 in each of the 2 cells: p = 2 · (1/C(4,2))² = 1/18; Holm over 3 model pairs and
    // 3 variant pairs (p = 1 each): 6/18. Four trials a model cannot tell them apart.
    expect(pair("pass", "never")?.pValue).toBeCloseTo(1 / 18, 9);
    expect(pair("pass", "never")?.pValueHolm).toBeCloseTo(1 / 3, 9);
    expect(pair("pass", "never")?.better).toBe("not distinguishable");
    expect(pair("pass", "never")?.meanDifference).toBe(1);
    expect(pair("pass", "half")?.better).toBe("not distinguishable");
    expect(pair("pass", "half")?.text).toContain("not distinguishable with 2 repeats");
    expect(s.variantComparisons).toHaveLength(3);
    // Every trial's run started with the limits eval.json records for its task (defaults, the SAM's
    // iterations: 1 and budget_usd: 1).
    const plan = JSON.parse(readFileSync(evalFiles(outcome.evalDir).plan, "utf8")) as EvalPlan;
    expect(plan.tasks[0]?.limits).toMatchObject({ iterations: 1, usd: 1 });
    for (const r of results(outcome.evalDir).values()) {
      const state = JSON.parse(readFileSync(join(r.runDir, "state.json"), "utf8")) as { limits: unknown };
      expect(state.limits, r.trialId).toEqual(plan.tasks[0]?.limits);
    }
    // What is on disk is what was returned; the page and the CSV are there.
    const onDisk = JSON.parse(readFileSync(evalFiles(outcome.evalDir).summary, "utf8")) as EvalSummary;
    expect(onDisk).toEqual(s);
    expect(readFileSync(evalFiles(outcome.evalDir).csv, "utf8").split("\n")).toHaveLength(1 + 6 + 1);
    expect(outcome.page.file && existsSync(outcome.page.file)).toBe(true);
    // Each trial is a normal run on its own copy holding only its variant, as task.md.
    const all = results(outcome.evalDir);
    expect(all.size).toBe(12);
    const r = all.get("echo.st.half.r1");
    expect(r).toMatchObject({ status: "fail", verdict: "FAILED", exitCode: 1, scripted: true, repeat: 1 });
    const copy = join(evalFiles(outcome.evalDir).trial("echo.st.half.r1"), "echo");
    expect(readdirSync(copy).filter((f) => f.endsWith(".md"))).toEqual(["task.md"]);
    expect(readFileSync(join(copy, "task.md"), "utf8")).toBe(
      readFileSync(join(root, "suite/echo/task.st.md"), "utf8"),
    );
    const tape = readFileSync(join(r?.runDir ?? "", "audit.jsonl"), "utf8")
      .trim()
      .split("\n");
    expect(tape.at(-1)).toContain(`"hash":"${r?.tapeHead}"`);
    const passed = all.get("echo.nl.pass.r0");
    expect(passed?.toolCalls).toBe(2);
    expect(passed?.tokens.input).toBeGreaterThan(0);
    expect(new Set([...all.values()].map((x) => x.runId)).size).toBe(12);
  }, 600_000);

  it("SIGKILL at three points, then --resume: the same summary, no trial twice, only unfinished ones again", async () => {
    const { root, home } = evalWorkspace("kill");
    writeFileSync(
      join(root, "kill.yaml"),
      [
        "tasks: [suite/echo]",
        "variants: [nl]",
        "models:",
        "  - { name: pass, spec: 'scripted:models/pass.yaml' }",
        "  - { name: half, scripts: [models/pass.yaml, models/never.yaml] }",
        "repeats: 2",
        "concurrency: 2",
        "",
      ].join("\n"),
    );
    const reference = await runEval({
      home: join(root, "ref-home"),
      suite: join(root, "kill.yaml"),
      retry: RETRY,
    });
    const env = { ...process.env, SCIFI_HOME: home };
    const evals = join(home, "evals");
    let child: ChildProcess = spawn(process.execPath, [CLI, "eval", join(root, "kill.yaml")], {
      env,
      stdio: "ignore",
    });
    // 1: the plan is written, no trial has ended.
    const evalDir = await waitFor(
      () => {
        const ids = existsSync(evals) ? readdirSync(evals) : [];
        return ids[0] && existsSync(join(evals, ids[0], "eval.json")) ? join(evals, ids[0]) : undefined;
      },
      120_000,
      20,
    );
    await killChild(child);
    const evalId = evalDir.split("/").at(-1) ?? "";
    const seen: Map<string, TrialResult>[] = [results(evalDir)];
    // 2 and 3: after 1 and after 2 results, with trials running.
    for (const atLeast of [1, 2]) {
      child = spawn(process.execPath, [CLI, "eval", "--resume", evalId], { env, stdio: "ignore" });
      await waitFor(() => (results(evalDir).size >= atLeast ? true : undefined), 300_000, 20);
      await killChild(child);
      seen.push(results(evalDir));
    }
    expect(seen.at(-1)?.size).toBeLessThan(4);
    const last = await exec(process.execPath, [CLI, "eval", "--resume", evalId], { env, timeout: 300_000 });
    expect(last.stdout).toMatch(/: 3 pass, 1 fail, 0 error, 0 pending of 4;/);
    const final = JSON.parse(readFileSync(evalFiles(evalDir).summary, "utf8")) as EvalSummary;
    expect(comparable(final)).toEqual(comparable(reference.summary));
    // Results once written are never replaced: each resume ran only what had none.
    const done = results(evalDir);
    expect(done.size).toBe(4);
    for (const before of seen)
      for (const [id, r] of before) expect(done.get(id)?.startedAt, id).toBe(r.startedAt);
    // Every run folder is a counted trial's, or one a kill cut short (no outcome), never two counted.
    const counted = new Set([...done.values()].map((r) => r.runId));
    expect(counted.size).toBe(4);
    for (const run of readdirSync(join(home, "runs")).filter((r) => r !== "index.html")) {
      if (counted.has(run)) continue;
      // Killed before its first checkpoint (no state.json yet), or later: either way no outcome.
      const file = join(home, "runs", run, "state.json");
      const state = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as { outcome?: unknown }) : {};
      expect(state.outcome, run).toBeUndefined();
    }
  }, 900_000);

  it("priced calls: USD per pass from the tapes, and the budget stops scheduling (said on the terminal)", async () => {
    const { root, home } = evalWorkspace("priced");
    // Two trials' worth of replies (the server's queues go on from trial to trial, one at a time),
    // each call 1000 input tokens at 10 USD per million: USD 0.01 a call, 5 calls, 0.05 a trial;
    // the budget (0.1) is spent after two trials, so the third is never started.
    const { ScriptedServer } = await import("../../runner/llm/scripted/server.ts");
    const server = await ScriptedServer.start(join(root, "models", "priced-twice.yaml"));
    try {
      writeFileSync(
        join(root, "models.yaml"),
        [
          "# A scripted server (labelled scripted in the model's name) priced through a models config.",
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
        join(root, "priced-suite.yaml"),
        "tasks: [suite/echo]\nvariants: [nl]\nmodels: [{ name: scripted-priced, spec: models.yaml }]\nrepeats: 3\nconcurrency: 1\nbudget_usd: 0.1\n",
      );
      const lines: string[] = [];
      const outcome = await runEval({
        home,
        suite: join(root, "priced-suite.yaml"),
        retry: RETRY,
        log: (l) => lines.push(l),
      });
      const s = outcome.summary;
      expect(outcome.stoppedByBudget, lines.join("\n")).toBe(true);
      expect(s.trials).toEqual({ planned: 3, pass: 2, fail: 0, error: 0, pending: 1 });
      expect(s.budget).toEqual({ usd: 0.1, spentUsd: expect.closeTo(0.1, 9), stoppedByBudget: true });
      expect(s.groups[0]?.usdPerPass).toBeCloseTo(0.05, 9);
      expect(s.groups[0]?.usdPerTrial).toMatchObject({ n: 2, mean: expect.closeTo(0.05, 9), se: 0 });
      expect(s.groups[0]?.tokens.mean).toBe(5000);
      expect(lines.join("\n")).toContain("budget spent: USD 0.1000 of 0.1; 1 trial(s) not started");
    } finally {
      await server.close();
    }
  }, 600_000);

  it("a trial whose sandbox dies is an error, counted apart; --retry-errors runs it again", async () => {
    const { root, home } = evalWorkspace("death");
    const suite = join(root, "slow");
    const first = await runEval({
      home,
      suite,
      models: [`scripted:${join(root, "models/pass.yaml")}`],
      retry: RETRY,
      onTrialStatus: (_trial, s) => {
        if (s.phase === "checks" && !active) active = killer(`${s.runId}-checks1`, 2);
      },
    });
    expect(active?.killed).toHaveLength(2);
    const [id] = [...results(first.evalDir).keys()];
    const r = results(first.evalDir).get(id ?? "");
    expect(r).toMatchObject({ status: "error", verdict: "ERROR", exitCode: 4 });
    expect(r?.cause).toMatch(/^sandbox: /);
    expect(first.summary.trials).toEqual({ planned: 1, pass: 0, fail: 0, error: 1, pending: 0 });
    expect(first.summary.groups[0]).toMatchObject({ n: 0, errors: 1, passRate: 0 });
    active?.stop();
    const evalId = first.summary.evalId;
    // A plain resume has nothing to run: the error is a result.
    expect((await resumeEval({ home, evalId, retry: RETRY })).ran).toEqual([]);
    const again = await resumeEval({ home, evalId, retryErrors: true, retry: RETRY });
    expect(again.ran).toEqual([id]);
    expect(again.summary.trials).toEqual({ planned: 1, pass: 1, fail: 0, error: 0, pending: 0 });
  }, 600_000);

  it("a trial no model could answer (the provider answers 500) is an error, not a failure; --retry-errors runs it when the outage is over", async () => {
    const { root, home } = evalWorkspace("outage");
    const model = join(root, "models", "outage.yaml");
    writeFileSync(
      model,
      "# Scripted: the provider is down.\nprescan:\n  - status: 500\n    message: overloaded\n",
    );
    const first = await runEval({
      home,
      suite: join(root, "suite"),
      models: [`scripted:${model}`],
      retry: RETRY,
    });
    const ids = [...results(first.evalDir).keys()].sort();
    expect(ids).toHaveLength(2); // the task's two description levels
    for (const r of results(first.evalDir).values()) {
      expect(r).toMatchObject({ status: "error", verdict: "ERROR", exitCode: 1 });
      expect(r.cause).toMatch(/^no model: no control model of rank 1 could answer \(tried .*server_error\)/);
    }
    expect(first.summary.trials).toEqual({ planned: 2, pass: 0, fail: 0, error: 2, pending: 0 });
    expect(first.summary.groups.map((g) => [g.n, g.errors])).toEqual([
      [0, 1],
      [0, 1],
    ]);
    cpSync(join(root, "models", "pass.yaml"), model); // the outage is over
    const again = await resumeEval({ home, evalId: first.summary.evalId, retryErrors: true, retry: RETRY });
    expect([...again.ran].sort()).toEqual(ids);
    expect(again.summary.trials).toEqual({ planned: 2, pass: 2, fail: 0, error: 0, pending: 0 });
  }, 600_000);
});
