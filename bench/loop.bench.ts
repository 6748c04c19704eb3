// Orchestration overhead per tool call: the work pass (loop + limits + gateway + audit tape +
// scripted model over HTTP answering instantly + sandbox exec) against a raw exec of the same
// command in the same sandbox, measured in the same run. Target: ratio <= 1.15.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuditTape } from "../runner/audit/tape.ts";
import { createModel } from "../runner/llm/create-model.ts";
import { resolveSpec } from "../runner/policy/resolve.ts";
import { loadSitePolicy, sitePolicyPath } from "../runner/policy/site.ts";
import { runPass } from "../runner/run/conversation.ts";
import { DEFAULT_LIMITS, RunBudget } from "../runner/run/limits.ts";
import { parseSamSync } from "../runner/sam/parse.ts";
import { getBackend } from "../runner/sandbox/registry.ts";
import type { Sandbox } from "../runner/sandbox/types.ts";
import { workTools } from "../runner/tools/registry.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { scaled } from "./size.ts";

const STEPS = scaled(25, 3);
const COMMAND = "echo bench";
const ROUNDS = scaled(3, 1);

export async function run(): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), "scifi-bench-loop-"));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  mkdirSync(taskDir);
  const samFile = join(taskDir, "task.md");
  writeFileSync(
    samFile,
    `---\nname: bench\nimage: ${process.env.SCIFI_BENCH_IMAGE ?? "scifi-sci:local"}\n---\n# Bench\n\n## To-do\nRun commands.\n\n## Expectation\n- Done.\n`,
  );
  const parsed = parseSamSync(samFile);
  if (!parsed.ok) throw new Error(`bench SAM invalid: ${JSON.stringify(parsed.diagnostics)}`);
  const site = loadSitePolicy(sitePolicyPath(home), false).policy;
  const spec = resolveSpec(parsed.sam, site, { home, runId: `bench-loop-${process.pid}` });
  const backend = await getBackend("docker");
  const sandbox = await backend.start(spec);
  try {
    await sandbox.exec(COMMAND); // warm-up
    const raw: number[] = [];
    const loop: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      raw.push(await rawPerCall(sandbox));
      loop.push(await loopPerCall(sandbox, root, round));
    }
    const best = (xs: number[]) => Math.min(...xs);
    return [
      {
        name: "work pass per tool call (scripted model, docker exec)",
        value: best(loop),
        baseline: best(raw),
        unit: "ms",
        maxRatio: 1.15,
        note: `${STEPS} steps of one bash call each, best of ${ROUNDS} rounds`,
      },
    ];
  } finally {
    await sandbox.stop();
  }
}

async function rawPerCall(sandbox: Sandbox): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < STEPS; i++) await sandbox.exec(COMMAND, { timeoutMs: 60_000 });
  return (performance.now() - start) / STEPS;
}

async function loopPerCall(sandbox: Sandbox, root: string, round: number): Promise<number> {
  const script = join(root, `script-${round}.yaml`);
  const steps = Array.from(
    { length: STEPS },
    (_, i) => `  - tool_calls: [{ name: bash, input: { command: "${COMMAND} ${i}" } }]`,
  );
  writeFileSync(
    script,
    `work:\n${steps.join("\n")}\n  - tool_calls: [{ name: report_done, input: { claim: done, summary: done } }]\n`,
  );
  const audit = new AuditTape(join(root, `audit-${round}.jsonl`), { runId: `bench-${round}` });
  const model = await createModel(`scripted:${script}`, audit);
  try {
    const limits = { ...DEFAULT_LIMITS, stepsPerPass: STEPS + 1 };
    const start = performance.now();
    const result = await runPass({
      model,
      tools: workTools,
      toolContext: { sandbox, bashTimeoutMs: 60_000, maxOutputChars: 20_000 },
      limits,
      budget: new RunBudget(limits),
      request: { role: "work", kind: "work", rank: 1, system: "bench", meta: { runId: `bench-${round}` } },
      brief: "bench",
      textReply: "nudge",
      blockerNudge: () => "",
    });
    const elapsed = performance.now() - start;
    if (result.exit.type !== "done" || result.toolCalls !== STEPS + 1) {
      throw new Error(
        `bench pass ended unexpectedly: ${JSON.stringify(result.exit)} after ${result.toolCalls} calls`,
      );
    }
    // The closing report_done step is model overhead too, so it is counted in the loop's time.
    return elapsed / STEPS;
  } finally {
    await model.close();
    audit.close();
  }
}
