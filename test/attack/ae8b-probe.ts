// AE-8b attacker helper (written from docs/eval.md, docs/loop.md "A sandbox that dies"): one tiny task
// whose first check runs the agent's own `run.sh` (so its code runs in the check phase) and whose
// second check is a check asset in a sub-folder; a scripted work agent that runs the given bash
// commands and reports done; an honest review that fails what the checks fail. Returns the run's
// outcome, or what the run threw (which `scifi eval` counts as an infrastructure `error`).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { readHistory } from "../../runner/memory/history.ts";
import type { HistoryRecord } from "../../runner/memory/history-events.ts";
import type { RunResult } from "../../runner/run/session/deps.ts";
import { runTask } from "../../runner/run/setup.ts";
import type { LimitConfig } from "../../runner/run-folder/state.ts";

export interface ProbeOptions {
  /** bash commands of the work pass, one step each. */
  work: string[];
  /** the agent's run.sh (run by the first check). */
  runSh?: string;
  backend?: "docker" | "apptainer";
  memory?: string;
  checkTimeout?: string;
  limits?: Partial<LimitConfig>;
  /** a hidden check asset `hidden/ref.txt` (the checks then run on a copy) and a compare stage reading it */
  hidden?: boolean;
  /** extra start files of the task folder (path relative to it: content) */
  files?: Record<string, string>;
  /** the review passes every item (an honest control run) */
  reviewPass?: boolean;
  /** extra SAM front-matter lines */
  front?: string;
}

export interface Probe {
  result?: RunResult;
  thrown?: string;
  /** the stack of what the run threw */
  stack?: string;
  history: HistoryRecord[];
  root: string;
  taskDir: string;
  wallMs: number;
}

/** What `scifi eval` would call the trial (runner/eval/trial.ts `ending`). */
export function evalStatus(p: Probe): "pass" | "fail" | "error" {
  if (!p.result) return "error";
  if (p.result.outcome.cause === "sandbox") return "error";
  return p.result.outcome.status === "passed" ? "pass" : "fail";
}

export async function probe(o: ProbeOptions): Promise<Probe> {
  const root = mkdtempSync(join(tmpdir(), "ae8b-"));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  mkdirSync(join(taskDir, "checks"), { recursive: true });
  const t = o.checkTimeout ?? "30s";
  writeFileSync(
    join(taskDir, "task.md"),
    [
      "---",
      "name: ae8b",
      "iterations: 1",
      "budget_usd: 1",
      `memory: ${o.memory ?? "512M"}`,
      o.hidden ? "check_assets: [checks/ok.sh, hidden/ref.txt]" : "check_assets: [checks/ok.sh]",
      ...(o.hidden ? ["hidden_assets: [hidden/ref.txt]"] : []),
      ...(o.front ? [o.front] : []),
      "---",
      "# Write out.txt",
      "",
      "## To-do",
      "Write `out.txt` holding `ok`, and a `run.sh` that prints it.",
      "",
      "## Expectation",
      "- `sh run.sh` prints ok.",
      `  \`\`\`check timeout=${t}`,
      "  sh run.sh | grep -qx ok",
      "  ```",
      "- `out.txt` holds ok.",
      `  \`\`\`check timeout=${t}`,
      "  sh checks/ok.sh",
      "  ```",
      ...(o.hidden
        ? [
            "- The reference holds ok.",
            `  \`\`\`compare timeout=${t}`,
            "  grep -qx ok hidden/ref.txt",
            "  ```",
          ]
        : []),
      "",
    ].join("\n"),
  );
  writeFileSync(join(taskDir, "checks", "ok.sh"), "grep -qx ok out.txt\n");
  if (o.hidden) {
    mkdirSync(join(taskDir, "hidden"));
    writeFileSync(join(taskDir, "hidden", "ref.txt"), "ok\n");
  }
  for (const [path, content] of Object.entries(o.files ?? {})) {
    mkdirSync(dirname(join(taskDir, path)), { recursive: true });
    writeFileSync(join(taskDir, path), content);
  }
  if (o.runSh !== undefined) writeFileSync(join(taskDir, "run.sh"), o.runSh);
  const script = {
    prescan: [{ json: { node: "root", rank: 1, skills: [], context: "", plan: "x", direction: "x" } }],
    work: [
      ...o.work.map((command) => ({ tool_calls: [{ name: "bash", input: { command } }] })),
      { tool_calls: [{ name: "report_done", input: { claim: "done", summary: "done" } }] },
    ],
    review: [
      {
        json: {
          items: [
            { id: "root/e1", pass: o.reviewPass === true, evidence: "checked" },
            { id: "root/e2", pass: o.reviewPass === true, evidence: "checked" },
            ...(o.hidden ? [{ id: "root/e3", pass: o.reviewPass === true, evidence: "checked" }] : []),
          ],
          findings: [],
          fixes: [],
          rank_adjustment: 0,
        },
      },
    ],
    final_review: [{ json: { group_suggestions: [], global_suggestions: [] } }],
  };
  const scriptFile = join(root, "script.yaml");
  writeFileSync(scriptFile, JSON.stringify(script, null, 1));
  const started = Date.now();
  let result: RunResult | undefined;
  let thrown: string | undefined;
  let stack: string | undefined;
  try {
    result = await runTask({
      home,
      task: join(taskDir, "task.md"),
      backend: o.backend ?? "docker",
      model: `scripted:${scriptFile}`,
      limits: o.limits,
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    });
  } catch (error) {
    thrown = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    stack = error instanceof Error ? error.stack : undefined;
  }
  const history = result ? readHistory(join(result.dir, "history.jsonl")) : [];
  return { result, thrown, stack, history, root, taskDir, wallMs: Date.now() - started };
}

/** One line for the log: status, outcome, deaths, wall time. */
export function summary(name: string, p: Probe): string {
  const deaths = p.history.filter((e) => e.type === "sandbox_died");
  const checks = p.history.flatMap((e) =>
    e.type === "check"
      ? [
          `${e.passed}:${e.exitCode}${e.timedOut ? ":timeout" : ""}[${(e.output ?? "").slice(-300).replace(/\n/g, "\\n")}]`,
        ]
      : [],
  );
  return `${name}: ${evalStatus(p)} | ${p.result ? JSON.stringify(p.result.outcome) : `THREW ${p.thrown}`} | deaths ${JSON.stringify(deaths)} | checks ${checks.join(",")} | ${p.wallMs} ms`;
}
