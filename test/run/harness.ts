// End-to-end helpers: copy an example task to a fresh folder (the agent writes there), make a fresh
// scifi home, and run it through the same wiring as `scifi run`, with a scripted model over HTTP.
import { type ChildProcess, execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readHistory } from "../../runner/memory/history.ts";
import type { RunResult } from "../../runner/run/session/deps.ts";
import type { RunStatus } from "../../runner/run/session/status.ts";
import { runTask } from "../../runner/run/setup.ts";
import type { LimitConfig } from "../../runner/run-folder/state.ts";

export const REPO = new URL("../..", import.meta.url).pathname;
export const IMAGE = "scifi-sci:local";

export function fixture(name: string): string {
  return join(REPO, "test", "fixtures", "runs", name);
}

export interface Workspace {
  root: string;
  home: string;
  taskDir: string;
  sam: string;
}

/** A copy of `tasks/examples/<name>` and an empty home; `iterations` rewrites the SAM's own limit. */
export function workspace(example: string, options: { iterations?: number } = {}): Workspace {
  const root = mkdtempSync(join(tmpdir(), `scifi-e2e-${example}-`));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  cpSync(join(REPO, "tasks", "examples", example), taskDir, { recursive: true });
  const sam = join(taskDir, "task.md");
  if (options.iterations !== undefined) {
    const text = readFileSync(sam, "utf8").replace(/^iterations: \d+$/m, `iterations: ${options.iterations}`);
    writeFileSync(sam, text);
  }
  return { root, home, taskDir, sam };
}

export interface ScriptedRun {
  result: RunResult;
  history: ReturnType<typeof readHistory>;
  statuses: RunStatus[];
}

export async function runScripted(
  ws: Workspace,
  script: string,
  options: { limits?: Partial<LimitConfig>; onStatus?: (s: RunStatus) => void; backend?: string } = {},
): Promise<ScriptedRun> {
  const statuses: RunStatus[] = [];
  const result = await runTask({
    home: ws.home,
    task: ws.sam,
    backend: options.backend ?? "docker",
    model: `scripted:${fixture(script)}`,
    limits: options.limits,
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    onStatus: (s) => {
      statuses.push(s);
      options.onStatus?.(s);
    },
  });
  return { result, history: readHistory(join(result.dir, "history.jsonl")), statuses };
}

/** Build the local image once (idempotent, cached by the script; concurrent callers wait). */
export function ensureImage(): void {
  execFileSync("bash", [join(REPO, "scripts", "build-image.sh")], { stdio: "inherit", timeout: 1_800_000 });
}

export function lines(file: string): string[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "");
}

/** Polls `probe` until it gives a value (a run reaching a point), or fails after `timeoutMs`. */
export async function waitFor<T>(probe: () => T | undefined, timeoutMs = 300_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("timed out waiting for the run to get there");
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** SIGKILLs a child process (a `scifi run`) and waits until it is gone. */
export async function killChild(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

/** Calls on an audit tape so far (0 before it exists). */
export function callCount(tape: string): number {
  if (!existsSync(tape)) return 0;
  return lines(tape).filter((l) => l.includes('"kind":"call"')).length;
}
