// Attacker a37d (issue 37, the next run stage made ready while a check runs): a task run whole
// through runTask with a scripted agent (labelled: no real LLM): two run stages, a third that gets
// check 1's view folder again (two are used in turn), and a compare stage. The honest agent writes
// 42; the attacker writes 41 and a Makefile whose `test` target (check 1) runs
// test/fixtures/a37d/probe.py: it looks for check 2's sandbox, already started beside it, and
// leaves marks and a lurker that would write 42 into any other sandbox's /task it could see.
// Checks 2 and 3 and the compare stage run the runner's look.py, which says what of check 1 it finds.
// Used by test/attack/a37d-held.e2e.test.ts (Docker) and test/sandbox/apptainer/a37d-held.inner.ts.
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { readHistory } from "../../runner/memory/history.ts";
import type { HistoryRecord } from "../../runner/memory/history-events.ts";
import type { RunResult } from "../../runner/run/session/deps.ts";
import { runTask } from "../../runner/run/setup.ts";

const FIXTURE = new URL("../fixtures/a37d", import.meta.url).pathname;

export const SAM = `---
name: a37d-ahead
walltime: 5m
iterations: 1
check_assets: [checks/look.py]
---
# Write the answer

## To-do
Write 42 to \`answer.txt\`, and a \`Makefile\` whose \`test\` target runs your tests and writes \`probe.txt\`.

## Expectation
- The agent's own tests pass.
  \`\`\`check timeout=1m outputs=probe.txt
  make -s test
  \`\`\`
- \`answer.txt\` holds 42, as the runner's verifier reads it.
  \`\`\`check timeout=1m
  python3 checks/look.py verify answer.txt
  \`\`\`
- Nothing of check 1 is in a later view made in the same place (run stages use two in turn).
  \`\`\`check timeout=1m
  python3 checks/look.py marks
  \`\`\`
- Nothing of a run stage's sandbox reaches the compare stage.
  \`\`\`compare
  python3 checks/look.py marks outputs/probe.txt
  \`\`\`
`;

function b64(file: string): string {
  return readFileSync(join(FIXTURE, file)).toString("base64");
}

export const HONEST = "echo 42 > answer.txt && printf 'test:\\n\\t@echo ok > probe.txt\\n' > Makefile";
/** 41, and a Makefile whose tests run the probe (it sleeps 4 s: check 2's sandbox starts meanwhile). */
export const CHEAT = `echo 41 > answer.txt && echo ${b64("probe.py")} | base64 -d > probe.py && printf 'test:\\n\\t@python3 probe.py\\n' > Makefile`;

export function agent(command: string): string {
  return [
    "# Scripted agent (labelled: no real LLM), attacker a37d.",
    "prescan:",
    '  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }',
    "work:",
    "  - tool_calls:",
    "      - name: bash",
    `        input: { command: ${JSON.stringify(command)} }`,
    "  - tool_calls:",
    "      - name: report_done",
    '        input: { claim: "answer.txt holds 42.", summary: "Done." }',
    "review:",
    "  - json:",
    "      items:",
    '        - { id: root/e1, pass: true, evidence: "-" }',
    '        - { id: root/e2, pass: true, evidence: "-" }',
    '        - { id: root/e3, pass: true, evidence: "-" }',
    '        - { id: root/e4, pass: true, evidence: "-" }',
    "      findings: []",
    "      fixes: []",
    "      rank_adjustment: 0",
    "final_review:",
    "  - json: { group_suggestions: [], global_suggestions: [] }",
    "",
  ].join("\n");
}

export interface Workspace {
  root: string;
  home: string;
  taskDir: string;
}

export function workspace(): Workspace {
  const root = mkdtempSync(join(tmpdir(), "scifi-a37d-"));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  mkdirSync(join(taskDir, "checks"), { recursive: true });
  writeFileSync(join(taskDir, "task.md"), SAM);
  writeFileSync(join(taskDir, "checks", "look.py"), readFileSync(join(FIXTURE, "look.py")));
  return { root, home, taskDir };
}

export interface AheadRun {
  result: RunResult;
  history: HistoryRecord[];
  ws: Workspace;
  /** The most check sandboxes of this run seen alive at once (2: the next one was made ready). */
  overlap: number;
}

const run = promisify(execFile);

/** This run's check sandboxes alive now (names), by the engine's own listing. */
async function liveChecks(backend: string, ws: Workspace): Promise<string[]> {
  if (backend === "docker") {
    const { stdout } = await run("docker", [
      "ps",
      "--filter",
      `label=scifi.home=${ws.home}`,
      "--format",
      '{{.Label "scifi.sandbox"}}',
    ]);
    return stdout.split("\n").filter((n) => n.includes("-checks"));
  }
  const runs = existsSync(join(ws.home, "runs")) ? readdirSync(join(ws.home, "runs")) : [];
  if (runs.length === 0) return [];
  const { stdout } = await run("apptainer", ["instance", "list"]);
  return stdout
    .split("\n")
    .map((l) => l.split(/\s+/)[0] ?? "")
    .filter(
      (n) => runs.some((id) => n.includes(id.replace(/[^A-Za-z0-9_.-]/g, "_"))) && n.includes("-checks"),
    );
}

export async function runAhead(command: string, backend: string, ws = workspace()): Promise<AheadRun> {
  const agentFile = join(ws.root, "agent.yaml");
  writeFileSync(agentFile, agent(command));
  let overlap = 0;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const live = await liveChecks(backend, ws).catch(() => []);
      overlap = Math.max(overlap, live.length);
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  try {
    const result = await runTask({
      home: ws.home,
      task: join(ws.taskDir, "task.md"),
      backend,
      model: `scripted:${agentFile}`,
      limits: { walltimeSec: 240, bashTimeoutSec: 30 },
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    });
    const file = join(result.dir, "history.jsonl");
    return { result, history: existsSync(file) ? readHistory(file) : [], ws, overlap };
  } finally {
    polling = false;
    await poller;
  }
}

/** A check's history event; its output and exit code. */
export function checkEvent(r: AheadRun, id: string) {
  const event = r.history.find((e) => e.type === "check" && e.check === id);
  if (event?.type !== "check") throw new Error(`no history event for ${id}`);
  return event;
}

/** The probe's report (check 1's output line `PROBE {...}`). */
export function probeReport(r: AheadRun): Record<string, unknown> {
  const line = (checkEvent(r, "root/check-1").output ?? "").split("\n").find((l) => l.startsWith("PROBE "));
  if (!line) throw new Error(`check 1 printed no probe report:\n${checkEvent(r, "root/check-1").output}`);
  return JSON.parse(line.slice("PROBE ".length)) as Record<string, unknown>;
}

/** What the compare stage printed (withheld from the agents; kept for people in check-output/). */
export function compareOutput(r: AheadRun): string {
  const dir = join(r.result.dir, "check-output");
  if (!existsSync(dir)) return "";
  return readdirSync(dir)
    .map((f) => readFileSync(join(dir, f), "utf8"))
    .join("\n");
}

/** check 1's tests sleep while the file `slow` is in the task folder: a runner can be killed then. */
export const SLOW_HONEST =
  "echo 42 > answer.txt && touch slow && printf 'test:\\n\\t@if [ -e slow ]; then sleep 40; fi; echo ok > probe.txt\\n' > Makefile";

/** Mount points of views under `home`'s run folders (the last path element: checks-copy, checks-copy-2). */
export function viewMounts(home: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((dir) => dir.startsWith(join(home, "runs")));
}

/** `scifi ARGS` with SCIFI_HOME=home, its output ignored: its exit code. */
export function cli(args: string[], home: string): Promise<number> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [join(import.meta.dirname, "..", "..", "bin", "scifi.js"), ...args], {
      env: { ...process.env, SCIFI_HOME: home },
      stdio: "ignore",
    });
    p.once("exit", (code) => resolve(code ?? -1));
  });
}
