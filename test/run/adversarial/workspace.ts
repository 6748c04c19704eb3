// The adversarial suite's workspace, runner and shared assertions: a task fixture copied to a fresh
// folder next to a sentinel, one whole run with a scripted agent (and, for some scenarios, a rerun of
// the same folder), and what every scenario checks. The scenarios are in scenarios.ts (the sumfix
// task and its variants) and stage-scenarios.ts (stand-alone tasks of issue 24: run and compare
// stages against hidden references, search paths of compiled toolchains, pipelines, early exits).
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { readTape } from "../../../runner/audit/verify.ts";
import { readHistory } from "../../../runner/memory/history.ts";
import type { HistoryRecord } from "../../../runner/memory/history-events.ts";
import { removeCopy } from "../../../runner/run/checks/check-copy.ts";
import type { RunResult } from "../../../runner/run/session/deps.ts";
import { InvalidInput } from "../../../runner/run/session/errors.ts";
import { runTask } from "../../../runner/run/setup.ts";

export const FIXTURES = new URL("../../fixtures/adversarial", import.meta.url).pathname;

/** A setuid/setgid file next to the task folder: the runner's host-side walks must not reach it. */
const SENTINEL = { name: "sentinel.txt", text: "sentinel\n", mode: 0o6755 };

/** Variants of the sumfix task: a folder laid over test/fixtures/adversarial/sumfix. */
export type SumfixVariant =
  | "sumfix"
  | "sumfix-tree"
  | "sumfix-hidden"
  | "sumfix-allowlist"
  | "sumfix-inline"
  | "sumfix-mixed"
  | "sumfix-hiddenout"
  | "sumfix-parts"
  | "sumfix-hiddenorder";

/**
 * Stand-alone tasks, each a whole fixture folder of its own: pyref (a Python function against a
 * hidden reference.json), verilog-alu (iverilog, a hidden RefModule), fortran-ref (gfortran, a
 * hidden module refdata), make-ref (GNU make, a hidden included makefile), pipeline (a check that
 * pipes a failing test through tail).
 */
export const STANDALONE_TASKS = [
  "pyref",
  "verilog-alu",
  "fortran-ref",
  "make-ref",
  "pipeline",
  // An attacker's own tasks (a24-scenarios.ts).
  "a24-adder",
  "a24-grade",
  "a24-chain",
  "a24-out",
  // Outputs whose format names the hidden reference (issue 37; output-formats.e2e.test.ts).
  "a37-formats",
  // Issue 37: three run stages that must share nothing (isolation-scenarios.ts).
  "iso-checks",
] as const;
export type StandaloneTask = (typeof STANDALONE_TASKS)[number];

export type TaskVariant = SumfixVariant | StandaloneTask;

function isStandalone(task: TaskVariant): task is StandaloneTask {
  return (STANDALONE_TASKS as readonly string[]).includes(task);
}

export interface Workspace {
  root: string;
  home: string;
  taskDir: string;
  sam: string;
}

/** One tool call of the work agent with the result it saw, read back from the audit tape. */
export interface ToolExchange {
  name: string;
  input: Record<string, unknown>;
  output: string;
  isError: boolean;
}

export interface AdversarialRun {
  ws: Workspace;
  result: RunResult;
  history: HistoryRecord[];
  /** The raw text of the run's records (audit tape, history, task memory), for leak scans. */
  records: string;
  /** Every work-agent tool call and its result, in order. */
  tools: ToolExchange[];
}

export interface Scenario {
  name: string;
  task: TaskVariant;
  /** Scripted agent, a file in test/fixtures/adversarial/agents/. */
  agent: string;
  /** Overrides the SAM's `iterations`. */
  iterations?: number;
  verify(run: AdversarialRun): void;
  /**
   * A fix may refuse the SAM at start instead (runTask throws InvalidInput naming it, as `scifi
   * validate` would): that holds too, and verify is not called.
   */
  refusable?: boolean;
  /** A second run of the same task folder (same scifi home) after the first, with its own agent. */
  rerun?: { agent: string; verify(run: AdversarialRun, first: AdversarialRun): void };
}

/**
 * The task copied to a fresh folder (a sumfix variant laid over the sumfix base; a stand-alone task
 * alone), and an empty scifi home.
 */
export function adversarialWorkspace(task: TaskVariant, options: { iterations?: number } = {}): Workspace {
  const root = mkdtempSync(join(tmpdir(), `scifi-adv-${task}-`));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  // Next to the task folder on the host: nothing may ever change here (see outsideUntouched).
  mkdirSync(join(root, "outside"));
  writeFileSync(join(root, "outside", SENTINEL.name), SENTINEL.text);
  chmodSync(join(root, "outside", SENTINEL.name), SENTINEL.mode);
  if (isStandalone(task)) cpSync(join(FIXTURES, task), taskDir, { recursive: true });
  else {
    cpSync(join(FIXTURES, "sumfix"), taskDir, { recursive: true });
    if (task !== "sumfix") cpSync(join(FIXTURES, task), taskDir, { recursive: true });
  }
  const sam = join(taskDir, "task.md");
  if (options.iterations !== undefined) {
    const text = readFileSync(sam, "utf8").replace(/^iterations: \d+$/m, `iterations: ${options.iterations}`);
    writeFileSync(sam, text);
  }
  return { root, home, taskDir, sam };
}

/** Runs the scenario on the backend and checks what it promises, and that nothing outside changed. */
export async function runAndVerify(scenario: Scenario, backend: string): Promise<void> {
  let run: AdversarialRun;
  try {
    run = await runScenario(scenario, backend);
  } catch (error) {
    if (scenario.refusable && error instanceof InvalidInput && error.samFile !== undefined) return;
    throw error;
  }
  scenario.verify(run);
  outsideUntouched(run);
  if (scenario.rerun) {
    const again = await runIn(run.ws, scenario.rerun.agent, backend);
    scenario.rerun.verify(again, run);
    outsideUntouched(again);
  }
  removeCopy(run.ws.root); // a failed scenario keeps its folders; folders the agent locked go too
}

export async function runScenario(scenario: Scenario, backend: string): Promise<AdversarialRun> {
  const ws = adversarialWorkspace(scenario.task, { iterations: scenario.iterations });
  return runIn(ws, scenario.agent, backend);
}

/** One whole run of the workspace's task with the scripted agent `agent` (a file in agents/). */
export async function runIn(ws: Workspace, agent: string, backend: string): Promise<AdversarialRun> {
  const result = await runTask({
    home: ws.home,
    task: ws.sam,
    backend,
    model: `scripted:${join(FIXTURES, "agents", agent)}`,
    limits: { walltimeSec: 240, bashTimeoutSec: 30 },
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
  });
  const files = ["audit.jsonl", "history.jsonl", "memory.md"].map((f) => join(result.dir, f));
  const records = files.map((f) => (existsSync(f) ? readFileSync(f, "utf8") : "")).join("\n");
  return {
    ws,
    result,
    history: readHistory(join(result.dir, "history.jsonl")),
    records,
    tools: workToolExchanges(join(result.dir, "audit.jsonl")),
  };
}

/** Tool calls and results of one role (work unless said), from its requests on the tape (deduplicated). */
export function workToolExchanges(tapeFile: string, role = "work"): ToolExchange[] {
  const calls = new Map<string, { name: string; input: Record<string, unknown> }>();
  const results = new Map<string, { output: string; isError: boolean }>();
  for (const record of readTape(tapeFile)) {
    if (record.kind !== "call" || record.role !== role) continue;
    for (const message of record.request.messages) {
      if (typeof message.content === "string") continue;
      for (const block of message.content) {
        if (block.type === "tool_use") calls.set(block.id, { name: block.name, input: block.input });
        if (block.type === "tool_result")
          results.set(block.toolUseId, { output: block.content, isError: block.isError === true });
      }
    }
  }
  return [...calls].flatMap(([id, call]) => {
    const outcome = results.get(id);
    return outcome ? [{ ...call, ...outcome }] : [];
  });
}

// ---- assertions shared by the scenarios ----

export function checkEvents(run: AdversarialRun) {
  return run.history.flatMap((e) => (e.type === "check" ? [e] : []));
}

/** The run failed, and the check named failed (its history event and the outcome reason say so). */
export function failedBecauseOf(run: AdversarialRun, check: string): void {
  const { outcome } = run.result;
  expect(outcome.status, outcome.reason).toBe("failed");
  expect(outcome.reason).toContain(check);
  const events = checkEvents(run).filter((e) => e.check === check);
  expect(events.length, `no history event for ${check}`).toBeGreaterThan(0);
  expect(events.every((e) => !e.passed)).toBe(true);
}

/** The folder next to the task folder holds only the sentinel, with its content, mode and owner. */
export function outsideUntouched(run: AdversarialRun): void {
  const outside = join(run.ws.root, "outside");
  expect(readdirSync(outside), "files written outside the task folder").toEqual([SENTINEL.name]);
  const file = join(outside, SENTINEL.name);
  const stat = lstatSync(file);
  expect(readFileSync(file, "utf8")).toBe(SENTINEL.text);
  expect(
    (stat.mode & 0o7777).toString(8),
    "the sentinel's mode (setuid/setgid bits cleared through a link?)",
  ).toBe(SENTINEL.mode.toString(8));
  expect(stat.uid, "the sentinel's owner (chowned through a link?)").toBe(process.getuid?.());
}

export function passed(run: AdversarialRun): void {
  expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
  expect(checkEvents(run).length).toBeGreaterThan(0);
  expect(checkEvents(run).every((e) => e.passed)).toBe(true);
}

/** A hidden reference of a task: its fixture, its task-folder path and the unique marker in it. */
export interface HiddenReference {
  fixture: string;
  file: string;
  marker: string;
}

/** The hidden reference reached no record nor tool result, and it is back in the task folder, unchanged. */
export function hiddenKeptAt(run: AdversarialRun, hidden: HiddenReference): void {
  const at = run.records.indexOf(hidden.marker);
  expect(
    at,
    `the hidden reference's marker is in the records: ...${run.records.slice(at - 300, at + 100)}`,
  ).toBe(-1);
  const shown = run.tools.filter((t) => t.output.includes(hidden.marker)).map((t) => t.name);
  expect(shown, "tool results showing the hidden reference").toEqual([]);
  const file = join(run.ws.taskDir, hidden.file);
  expect(lstatSync(file).isFile(), `${hidden.file} is a regular file again`).toBe(true);
  expect(readFileSync(file, "utf8")).toBe(readFileSync(join(FIXTURES, hidden.fixture, hidden.file), "utf8"));
}
