// Shared by attacker a41d's end-to-end files (test/attack/a41d-held.e2e.test.ts and the pending
// test/open/a41d-*.e2e.pending.ts, issue 41's signals and ctl): a real `scifi run` on Docker of the
// gfortran example (it has a hidden check asset) under a scripted model (labelled: no real LLM)
// whose work pass runs a long command, so a signal or a decision can come in the middle of a phase.
import { execFileSync, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO, waitFor } from "../run/harness.ts";
import { CLI } from "./a41-run.ts";

export const EXAMPLE = "gfortran-build-run";
/** The example's hidden check asset: taken out of the task folder at start, put back at every exit. */
export const HIDDEN = "checks/expected_output.txt";

export interface Workspace {
  root: string;
  home: string;
  taskDir: string;
}

export function workspace(): Workspace {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "a41d-")));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  cpSync(join(REPO, "tasks", "examples", EXAMPLE), taskDir, { recursive: true });
  return { root, home, taskDir };
}

/**
 * A scripted model (not a real LLM): the work agent writes a makefile whose recipe sleeps (`sleep`
 * is not on the task's allowlist, `make` is) and runs it for `workSec`, or leaves a `Makefile` whose
 * `clean` sleeps `checkSec` (the check's run stage runs `make clean`), then says done. `touch`: a
 * file the work's make writes once its sleep is over (the command was not cut short).
 */
export function script(opts: { workSec?: number; checkSec?: number; touch?: string }): string {
  const file = join(mkdtempSync(join(tmpdir(), "a41d-script-")), "script.yaml");
  const work: string[] = [];
  if (opts.workSec)
    work.push(
      "  - tool_calls:",
      "      - name: write_file",
      `        input: {"path": "slow.mk", "content": "all:\\n\\tsleep ${opts.workSec}\\n${opts.touch ? `\\ttouch ${opts.touch}\\n` : ""}"}`,
      "  - tool_calls:",
      "      - name: bash",
      '        input: {"command": "make -f slow.mk"}',
    );
  if (opts.checkSec)
    work.push(
      "  - tool_calls:",
      "      - name: write_file",
      `        input: {"path": "Makefile", "content": "clean:\\n\\tsleep ${opts.checkSec}\\nstats:\\n\\ttrue\\n"}`,
    );
  writeFileSync(
    file,
    [
      "# Scripted (not a real LLM): attacker a41d's signal tests.",
      "prescan:",
      '  - json: { node: root, rank: 2, skills: [], context: "", plan: "p", direction: "d" }',
      "work:",
      ...work,
      "  - tool_calls:",
      "      - name: report_done",
      '        input: {"claim": "done", "summary": "done"}',
      "review:",
      "  - json:",
      "      items:",
      '        - { id: root/e1, pass: true, evidence: "-" }',
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

/** This home's containers, running or not. */
export function containers(home: string): string {
  const label = `label=scifi.home=${realpathSync(home)}`;
  return execFileSync("docker", ["ps", "-aq", "--filter", label], { encoding: "utf8" }).trim();
}

/** Mount points under `root` (a check view left mounted, say). */
export function mountsUnder(root: string): string[] {
  return execFileSync("cat", ["/proc/self/mounts"], { encoding: "utf8" })
    .split("\n")
    .map((l) => l.split(" ")[1] ?? "")
    .filter((m) => m.startsWith(`${root}/`));
}

/** Paths under `dir` (not crossing into mounts) whose owner is not `uid`. */
export function ownedByOthers(dir: string, uid: number): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const st = statSync(path, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.uid !== uid) found.push(path);
      if (st.isDirectory() && !st.isSymbolicLink()) walk(path);
    }
  };
  walk(dir);
  return found;
}

export function unmountAll(root: string): void {
  for (const m of mountsUnder(root).reverse()) execFileSync("umount", ["-l", m]);
}

/** (python3) Runs argv on a new pty as its session leader; `seconds` after `marker` shows, closes the master; prints the exit code. */
export const HANGUP = `
import os, sys, time, select, pty
marker, delay, argv = sys.argv[1].encode(), float(sys.argv[2]), sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
seen, start = b"", time.time()
while marker not in seen and time.time() - start < 120:
    if select.select([fd], [], [], 0.5)[0]:
        try: seen += os.read(fd, 65536)
        except OSError: break
time.sleep(delay)
os.close(fd)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
`;

/** `scifi run` until `phase` has shown for `afterMs`, then SIGTERM; its exit code and stderr. */
export async function sigtermIn(
  phase: RegExp,
  afterMs: number,
  opts: { workSec?: number; checkSec?: number },
): Promise<{ code: number | null; err: string; ws: Workspace }> {
  const ws = workspace();
  const child = spawn(
    process.execPath,
    [CLI, "run", ws.taskDir, "--model", `scripted:${script(opts)}`, "--backend", "docker"],
    { env: { ...process.env, SCIFI_HOME: ws.home }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let err = "";
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exit = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  await waitFor(() => (phase.test(err) ? true : undefined), 120_000);
  await new Promise((r) => setTimeout(r, afterMs));
  child.kill("SIGTERM");
  return { code: await exit, err, ws };
}
