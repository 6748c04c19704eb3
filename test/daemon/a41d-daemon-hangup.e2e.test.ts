// Attacker a41d (issue 41, signals, daemon): the terminal a `scifi daemon` was started from is
// closed (an ssh session drops) while a task runs. Real Docker, a real pty (python3's pty module),
// a scripted model (labelled scripted).
//
// Doc promise: docs/daemon.md: "SIGTERM / SIGINT / SIGHUP: the daemon stops taking tasks, sends
// SIGTERM to each run (the run stops its sandbox ...), waits up to 60 s, then exits 0. The tasks
// stay `queued` with a `resumeRunId` and resume first on the next start. SIGHUP does the same (a
// closed terminal)".
// What happened (measured): the hangup's SIGHUP starts Daemon.stop, whose first log line
// (runner/daemon/log.ts write, to the dead terminal) throws write EIO, uncaught: the daemon exits 1
// at once. Its worker (a process group of its own, so no SIGHUP reaches it) runs on with its
// sandbox, unwatched (measured: still working two minutes later), and the task's record stays
// `running` with no resumeRunId: the next start takes the worker for one a crash left, and a worker
// found dead three times fails the task.
// Fixed (fix41-signals): the daemon's log never throws (runner/std-streams.ts: errors on stdout and
// stderr ignored, writes wrapped; runner/daemon/log.ts writes through it), so SIGHUP stops the
// daemon as SIGTERM does; the worker, interrupted through its run's stop (runner/daemon/worker.ts,
// sandbox/live.ts), ends through the run's own exit, so the hidden check asset is back in the task
// folder too. (The test no longer signals pid 0, its own process group, when the record has no pid.)
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI } from "../attack/a41-run.ts";
import { containers, HANGUP, HIDDEN, script, workspace } from "../attack/a41d-run.ts";
import { hasEngine } from "../helpers/engines.ts";

function alive(pid: number): boolean {
  // pid 0 would name this process group (kill(0, ...)): never signal it.
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!hasEngine("docker"))(
  "a41d: a closed terminal stops the daemon as SIGHUP (docker)",
  { timeout: 180_000 },
  () => {
    it("exit 0, the worker stopped, the task queued to resume", async () => {
      const ws = workspace();
      const inbox = join(ws.home, "tasks");
      mkdirSync(inbox);
      execFileSync("cp", ["-r", ws.taskDir, join(inbox, "gf")]);
      const argv = [process.execPath, CLI, "daemon", "--model", `scripted:${script({ workSec: 240 })}`];
      const code = execFileSync(
        "python3",
        [
          "-c",
          HANGUP,
          "start task=gf",
          "5",
          ...argv,
          "--backend",
          "docker",
          "--concurrency",
          "1",
          "--settle-ms",
          "100",
        ],
        { env: { ...process.env, SCIFI_HOME: ws.home }, encoding: "utf8", timeout: 150_000 },
      ).trim();
      const record = () =>
        JSON.parse(readFileSync(join(ws.home, "daemon", "tasks", "gf.json"), "utf8")) as {
          state: string;
          resumeRunId?: string;
          attempts: { pid?: number; endedAt?: string; exitCode?: number }[];
        };
      const attempt = record().attempts[0];
      // A worker the daemon saw end has no pid on its record any more; one it lost keeps it.
      const worker = attempt?.pid ?? 0;
      const stillThere = alive(worker);
      if (stillThere) process.kill(worker, "SIGTERM"); // leave nothing running behind the test
      await new Promise((r) => setTimeout(r, 3_000));
      expect(code, "the daemon's exit code").toBe("0");
      expect(stillThere, `worker ${worker} still running after the daemon exited`).toBe(false);
      // The daemon waited for its worker, which ended as on SIGTERM (checkpoint kept).
      expect(attempt?.endedAt, "the daemon saw its worker end").toBeDefined();
      expect(attempt?.exitCode).toBe(143);
      expect(containers(ws.home)).toBe("");
      expect(record().state).toBe("queued");
      expect(record().resumeRunId).toBeDefined();
      // The run's own exit ran in the worker: the hidden check asset is back in the task folder.
      expect(existsSync(join(inbox, "gf", HIDDEN)), `${HIDDEN} missing from the task folder`).toBe(true);
    });
  },
);
