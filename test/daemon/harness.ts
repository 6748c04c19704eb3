// Daemon test helpers: a fresh home with an inbox, the real `scifi daemon` as a child process (so a
// test can SIGKILL it), SAMs dropped the way users do (direct write or write+rename), and polling.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TaskRecord } from "../../runner/daemon/records.ts";
import { listTasks } from "../../runner/daemon/records.ts";
import { runDir, runFiles } from "../../runner/paths.ts";
import { REPO } from "../run/harness.ts";

export const FIXTURES = join(REPO, "test", "daemon", "fixtures");
export const SCRIPT = `scripted:${join(FIXTURES, "trivial.yaml")}`;
const CLI = join(REPO, "bin", "scifi.js");

export interface Home {
  root: string;
  home: string;
  inbox: string;
}

export function makeHome(): Home {
  const root = mkdtempSync(join(tmpdir(), "scifi-daemon-"));
  const home = join(root, "home");
  const inbox = join(home, "tasks");
  mkdirSync(inbox, { recursive: true });
  return { root, home, inbox };
}

export function fixtureText(name: string, rename?: string): string {
  const text = readFileSync(join(FIXTURES, name), "utf8");
  return rename ? text.replace(/^name: .*$/m, `name: ${rename}`) : text;
}

/** A single-file task `<inbox>/<key>`, written as `.tmp` then renamed (the atomic convention). */
export function dropFile(h: Home, key: string, text: string): string {
  const file = join(h.inbox, key);
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
  return file;
}

/** A folder task `<inbox>/<key>/task.md`; `slow` adds the file that makes the scripted step pause. */
export function dropFolder(h: Home, key: string, text: string, options: { slow?: boolean } = {}): string {
  const staging = join(h.root, `.staging-${key}`);
  mkdirSync(staging);
  writeFileSync(join(staging, "task.md"), text);
  if (options.slow) writeFileSync(join(staging, "slow"), "");
  // The folder appears with its SAM complete: built outside, then moved in.
  cpSync(staging, join(h.inbox, key), { recursive: true });
  return join(h.inbox, key, "task.md");
}

export interface RunningDaemon {
  child: ChildProcess;
  pid: number;
  log: () => string;
  exited: Promise<number | null>;
}

/** Ends (SIGTERM) every daemon of `started` still running and empties it: a test file's afterEach. */
export async function stopDaemons(started: RunningDaemon[]): Promise<void> {
  for (const d of started.splice(0)) {
    if (d.child.exitCode === null && d.child.signalCode === null) {
      d.child.kill("SIGTERM");
      await d.exited;
    }
  }
}

/** The run id of task `key` once it is running and its run folder holds state.json. */
export function runningRunId(h: Home, key: string): Promise<string> {
  return waitFor(`task ${key} running`, () => {
    const task = tasksByKey(h).get(key);
    const id = task?.attempts.at(-1)?.runId;
    return task?.state === "running" && id && existsSync(runFiles(runDir(h.home, id)).state) ? id : undefined;
  });
}

export function startDaemon(h: Home, args: string[] = []): RunningDaemon {
  let out = "";
  const child = spawn(
    process.execPath,
    [CLI, "daemon", "--model", SCRIPT, "--settle-ms", "300", "--log-format", "json", ...args],
    { cwd: h.home, env: { ...process.env, SCIFI_HOME: h.home }, stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  if (!child.pid) throw new Error("daemon did not start");
  return { child, pid: child.pid, log: () => out, exited };
}

/** Structured log events of a daemon run (`--log-format json`). */
export function events(log: string): { event: string; task?: string; [k: string]: unknown }[] {
  return log
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { event: string; task?: string });
}

export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false,
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = probe();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
}

export function tasksByKey(h: Home): Map<string, TaskRecord> {
  return new Map(listTasks(h.home).map((t) => [t.key, t]));
}

export function scifi(h: Home, args: string[]): { code: number; stdout: string; stderr: string } {
  try {
    const stdout = execFileSync(process.execPath, [CLI, ...args], {
      cwd: h.home,
      env: { ...process.env, SCIFI_HOME: h.home },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr: "" };
  } catch (error) {
    const e = error as { status: number; stdout: string; stderr: string };
    return { code: e.status, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Containers of the given runs (also their resume sandboxes `<runId>-resumeN`). */
export function containersOf(runIds: readonly string[]): string[] {
  const out = execFileSync(
    "docker",
    ["ps", "-a", "--filter", "label=scifi=1", "--format", '{{.Names}} {{.Label "scifi.run"}}'],
    { encoding: "utf8" },
  );
  return out
    .split("\n")
    .filter((line) => line && runIds.some((id) => (line.split(" ")[1] ?? "").startsWith(id)));
}
