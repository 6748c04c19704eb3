// The critique's cost per iteration beside the review's (`npm run bench loop` runs it with the loop
// bench): the lhco-dijet-selection example run through the real loop on Docker with the scripted
// tracer and critique (labelled scripted), two iterations (critique: block). Per iteration, wall time
// of the review phase (last check -> verdict) and of the critique phase (verdict -> critique record),
// and the tokens of each phase's calls on the audit tape.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readTape } from "../runner/audit/verify.ts";
import { readHistory } from "../runner/memory/history.ts";
import { runTask } from "../runner/run/setup.ts";
import type { BenchResult } from "../scripts/bench.ts";

const REPO = join(import.meta.dirname, "..");

export async function run(): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), "scifi-bench-critique-"));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  cpSync(join(REPO, "tasks", "examples", "lhco-dijet-selection"), taskDir, { recursive: true });
  const sam = join(taskDir, "task.md");
  writeFileSync(
    sam,
    readFileSync(sam, "utf8").replace("skills: [lhco]\n", "skills: [lhco]\ncritique: block\n"),
  );
  const result = await runTask({
    home,
    task: sam,
    backend: "docker",
    model: `scripted:${join(REPO, "test", "fixtures", "runs", "lhco-critique-block.yaml")}`,
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
  });
  if (result.outcome.status !== "passed") throw new Error(`bench run did not pass: ${result.outcome.reason}`);
  const history = readHistory(join(result.dir, "history.jsonl"));
  const review: number[] = [];
  const critique: number[] = [];
  let lastCheck = 0;
  let verdictAt = 0;
  for (const e of history) {
    const t = Date.parse(e.time);
    if (e.type === "check") lastCheck = t;
    if (e.type === "verdict") {
      verdictAt = t;
      review.push(t - lastCheck);
    }
    if (e.type === "critique") critique.push(t - verdictAt);
  }
  const tokens = (roles: string[]) =>
    readTape(join(result.dir, "audit.jsonl"), { tolerant: true })
      .filter((r) => r.kind === "call" && roles.includes(r.role))
      .reduce((sum, r) => sum + (r.kind === "call" ? (r.usage?.input ?? 0) + (r.usage?.output ?? 0) : 0), 0);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const iterations = critique.length;
  return [
    {
      name: "critique phase per iteration (tracer sandbox + tracer + critique, scripted, docker)",
      value: mean(critique),
      baseline: mean(review),
      unit: "ms",
      // The tracer starts a sandbox of its own like the review, and makes three model calls to its one.
      maxRatio: 4,
      note: `baseline: the review phase of the same iterations (${iterations} iterations)`,
    },
    {
      name: "critique tokens per iteration (scripted: characters / 4)",
      value: tokens(["tracer", "critique"]) / Math.max(1, iterations),
      baseline: tokens(["review"]) / Math.max(1, iterations),
      unit: "tokens",
      note: "baseline: the review's tokens per iteration",
    },
  ];
}
