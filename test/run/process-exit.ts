// Helpers for the tests that every way a run ends also ends its process (issue 32): the real CLI
// (`scifi run`) with a scripted model, a preload that says whether the process ended by itself with
// nothing open (test/fixtures/process-exit/preload.mjs), and a bound from the verdict to the exit.
// Shared by the Docker suite (process-exit.e2e.test.ts) and the Apptainer one inside the harness.
import { spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO, type Workspace } from "./harness.ts";

export const PRELOAD = join(REPO, "test", "fixtures", "process-exit", "preload.mjs");
/** How long a process may take from its verdict (or a signal) to its exit. */
export const EXIT_BOUND_MS = 10_000;

/** A scripted model (written for these tests): the work agent makes these tool calls, then claims done. */
export function exitScript(calls: { name: string; input: Record<string, unknown> }[]): string {
  const file = join(mkdtempSync(join(tmpdir(), "scifi-exit-script-")), "script.yaml");
  const steps = [...calls, { name: "report_done", input: { claim: "done", summary: "done" } }].flatMap(
    (c) => ["  - tool_calls:", `      - name: ${c.name}`, `        input: ${JSON.stringify(c.input)}`],
  );
  writeFileSync(
    file,
    [
      "# Scripted (not a real LLM): the work agent's calls for a process-exit test, then done.",
      "prescan:",
      '  - json: { node: root, rank: 2, skills: [], context: "", plan: "p", direction: "d" }',
      "work:",
      ...steps,
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

/** The verilator example's fix, as the scripted agent's edit (its checks then pass). */
export const FIX_COUNTER = {
  name: "edit_file",
  input: {
    path: "rtl/counter.v",
    old_text: "localparam logic [WIDTH-1:0] LAST = WIDTH'(N);",
    new_text: "localparam logic [WIDTH-1:0] LAST = WIDTH'(N - 1);",
  },
};

export interface CliOptions {
  backend: "docker" | "apptainer";
  sitePolicy?: string;
  /** Keep a handle open in the process (the preload's timer): it then ends only through a signal. */
  holdOpen?: boolean;
  /** Instead of `scifi run`: the daemon's worker (runner/daemon/worker.ts) with this run id. */
  workerRunId?: string;
  /** Send this signal `delayMs` after `when` first holds for the stderr so far, or (without `when`) after the verdict. */
  signal?: NodeJS.Signals;
  when?: (stderr: string) => boolean;
  delayMs?: number;
}

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** From the verdict on stdout (or the signal sent, whichever came last) to the exit, in ms. */
  exitAfterMs: number;
  /** What was still active when Node's event loop ran empty; undefined: it did not end by itself. */
  openAtExit: string[] | undefined;
  /** What kept it alive when it overstayed the bound (it was then killed). */
  heldBy: string[] | undefined;
  runDir: string | undefined;
}

/** Runs `scifi run` on the workspace's task with `script` as the model, as a user's script would. */
export async function runCli(ws: Workspace, script: string, o: CliOptions): Promise<CliRun> {
  const dir = mkdtempSync(join(tmpdir(), "scifi-exit-cli-"));
  const handles = join(dir, "handles.json");
  // Output to files, as a script's log would be: pipes would be handles of the process's own.
  const [outFile, errFile] = [join(dir, "stdout"), join(dir, "stderr")];
  const [outFd, errFd] = [openSync(outFile, "w"), openSync(errFile, "w")];
  const args = ["--import", PRELOAD];
  if (o.workerRunId)
    args.push(
      join(REPO, "runner/daemon/worker.ts"),
      "--home",
      ws.home,
      "--run-id",
      o.workerRunId,
      "--sam",
      ws.sam,
    );
  else args.push(join(REPO, "bin", "scifi.js"), "run", ws.taskDir);
  args.push("--model", `scripted:${script}`, "--backend", o.backend);
  if (o.sitePolicy) args.push("--site-policy", o.sitePolicy);
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      SCIFI_HOME: ws.home,
      SCIFI_TEST_HANDLES: handles,
      ...(o.holdOpen ? { SCIFI_TEST_HOLD_OPEN: "1" } : {}),
    },
    stdio: ["ignore", outFd, errFd],
  });
  closeSync(outFd);
  closeSync(errFd);
  let stdout = "";
  let stderr = "";
  let markAt: number | undefined;
  let signalled = false;
  let asked = false;
  let heldBy: string[] | undefined;
  let overstay: NodeJS.Timeout | undefined;
  // From the mark on, the process has EXIT_BOUND_MS; then it is asked what holds it, and killed.
  const mark = () => {
    markAt = Date.now();
    clearTimeout(overstay);
    overstay = setTimeout(() => {
      child.kill("SIGUSR2");
      setTimeout(() => {
        heldBy = existsSync(`${handles}.alive`)
          ? (JSON.parse(readFileSync(`${handles}.alive`, "utf8")) as string[])
          : ["(no answer to SIGUSR2)"];
        child.kill("SIGKILL");
      }, 1_000);
    }, EXIT_BOUND_MS);
  };
  const send = (signal: NodeJS.Signals) => {
    if (signalled) return;
    signalled = true;
    child.kill(signal);
    mark();
  };
  let lastPollAt = Date.now();
  const watch = setInterval(() => {
    lastPollAt = Date.now();
    stdout = readFileSync(outFile, "utf8");
    stderr = readFileSync(errFile, "utf8");
    if (markAt === undefined && /^(passed|failed|blocked): /im.test(stdout)) {
      mark();
      // After the verdict: the run has returned; the signal must still end the process.
      if (o.signal && !o.when) setTimeout(() => send(o.signal as NodeJS.Signals), 500);
    }
    if (o.signal && !asked && o.when?.(stderr)) {
      asked = true;
      setTimeout(() => send(o.signal as NodeJS.Signals), o.delayMs ?? 0);
    }
  }, 50);
  // A run that never reaches its verdict fails the test rather than hanging the suite.
  const hard = setTimeout(() => child.kill("SIGKILL"), 400_000);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) =>
    child.once("exit", (c, s) => done([c, s])),
  );
  const exitedAt = Date.now();
  clearInterval(watch);
  stdout = readFileSync(outFile, "utf8");
  stderr = readFileSync(errFile, "utf8");
  // Verdict and exit between two polls (a fast exit): the verdict came after the last poll, so the
  // exit followed it by at most exitedAt - lastPollAt.
  if (markAt === undefined && !signalled && /^(passed|failed|blocked): /im.test(stdout)) markAt = lastPollAt;
  clearTimeout(overstay);
  clearTimeout(hard);
  const openAtExit = existsSync(handles)
    ? (JSON.parse(readFileSync(handles, "utf8")) as string[])
    : undefined;
  const runs = join(ws.home, "runs");
  const runId = existsSync(runs) ? readdirSync(runs).find((n) => !n.endsWith(".html")) : undefined;
  return {
    code,
    signal,
    stdout,
    stderr,
    exitAfterMs: markAt === undefined ? Number.POSITIVE_INFINITY : exitedAt - markAt,
    openAtExit,
    heldBy,
    runDir: runId ? join(runs, runId) : undefined,
  };
}

/** What a failed expectation shows: how the process ended and what it printed. */
export function shown(run: CliRun): string {
  return [
    `exit ${run.code ?? run.signal}, ${run.exitAfterMs} ms after the verdict/signal`,
    `held by: ${JSON.stringify(run.heldBy)}; open at exit: ${JSON.stringify(run.openAtExit)}`,
    `stdout:\n${run.stdout.slice(-2_000)}`,
    `stderr:\n${run.stderr.slice(-4_000)}`,
  ].join("\n");
}

/** The run's last history event (its `run_end`, when it ended with an outcome). */
export function lastEvent(run: CliRun): Record<string, unknown> | undefined {
  if (!run.runDir) return undefined;
  const lines = readFileSync(join(run.runDir, "history.jsonl"), "utf8").trim().split("\n");
  return JSON.parse(lines.at(-1) ?? "{}") as Record<string, unknown>;
}
