// Attacker a39 (issue 39, integrity events): one real Docker run of the integrity fixture task
// (test/fixtures/integrity/task: check asset checks/check.py, an allowlist, data.test:8000 through the
// run's proxy) with a scripted work agent whose bash commands the attack chooses. Written from
// docs/integrity.md; the runs are the same as test/run/session/integrity-table.ts's, only the agent differs.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readHistory } from "../../runner/memory/history.ts";
import type { HistoryRecord } from "../../runner/memory/history-events.ts";
import type { RunResult } from "../../runner/run/session/deps.ts";
import { runTask } from "../../runner/run/setup.ts";
import { createDockerBackend } from "../../runner/sandbox/docker.ts";
import { FIXTURE } from "../run/session/integrity-table.ts";

export type IntegrityRecord = Extract<HistoryRecord, { type: "integrity" }>;

export interface AttackRun {
  home: string;
  taskDir: string;
  result: RunResult;
  history: HistoryRecord[];
  events: IntegrityRecord[];
}

/** A work step: a bash command, or any tool call given whole (name, input). */
export type Step = string | { name: string; input: Record<string, unknown> };

function yamlStep(step: Step): string {
  const call = typeof step === "string" ? { name: "bash", input: { command: step } } : step;
  // JSON is YAML: every agent string stays exactly what the attack wrote.
  return `  - tool_calls:\n      - ${JSON.stringify(call)}\n`;
}

/** The scripted agent (labelled scripted): the steps, then report_done; the review fails the item unless told. */
export function agentYaml(steps: Step[], reviewPass = false, reviewSteps: Step[] = []): string {
  return [
    "# scripted attacker a39",
    "prescan:",
    '  - json: { node: root, rank: 1, skills: [], context: "", plan: "answer", direction: "answer" }',
    "work:",
    ...steps.map(yamlStep).map((s) => s.trimEnd()),
    "  - tool_calls:",
    '      - name: report_done\n        input: { claim: "answer.txt holds 42.", summary: "Done." }',
    "review:",
    ...reviewSteps.map(yamlStep).map((s) => s.trimEnd()),
    "  - json:",
    "      items:",
    `        - { id: root/e1, pass: ${reviewPass}, evidence: "see the check" }`,
    "      findings: []",
    "      fixes: []",
    "      rank_adjustment: 0",
    "final_review:",
    "  - json: { group_suggestions: [], global_suggestions: [] }",
    "",
  ].join("\n");
}

/** Runs the fixture task (optionally with extra task files) with the scripted agent on Docker. */
export async function attackRun(
  name: string,
  steps: Step[],
  opts: {
    files?: Record<string, string>;
    taskMd?: (md: string) => string;
    reviewPass?: boolean;
    /** Tool calls of the review agent before its verdict. */
    reviewSteps?: Step[];
  } = {},
): Promise<AttackRun> {
  const dir = mkdtempSync(join(tmpdir(), `a39-${name}-`));
  const home = join(dir, "home");
  const taskDir = join(dir, "task");
  mkdirSync(home, { recursive: true });
  cpSync(join(FIXTURE, "task"), taskDir, { recursive: true });
  for (const [rel, content] of Object.entries(opts.files ?? {})) writeFileSync(join(taskDir, rel), content);
  if (opts.taskMd) {
    const md = join(taskDir, "task.md");
    writeFileSync(md, opts.taskMd(readFileSync(md, "utf8")));
  }
  const agent = join(dir, `${name}.yaml`);
  writeFileSync(agent, agentYaml(steps, opts.reviewPass, opts.reviewSteps));
  const site = join(home, "site-policy.yaml");
  writeFileSync(site, `allowedHosts: ["*.test:8000"]\n`);
  const result = await runTask({
    home,
    task: join(taskDir, "task.md"),
    sitePolicy: site,
    model: `scripted:${agent}`,
    limits: { walltimeSec: 200, bashTimeoutSec: 60 },
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    sandboxBackend: createDockerBackend({ proxy: { hosts: {}, systemResolver: false } }),
  });
  const history = readHistory(join(result.dir, "history.jsonl"));
  const events = history.filter((e): e is IntegrityRecord => e.type === "integrity");
  return { home, taskDir, result, history, events };
}

/** The bash outputs of the work agent's calls, for failure messages. */
export function toolOutputs(run: AttackRun): string {
  return readFileSync(join(run.result.dir, "audit.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.includes("tool_result"))
    .map((l) => l.slice(0, 3000))
    .join("\n");
}
