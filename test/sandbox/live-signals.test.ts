// The one signal policy (runner/sandbox/live.ts) and the relaunched run's watch on its launcher
// (runner/cli/launcher.ts), in real processes: SIGHUP ends a run like SIGTERM (129), the same
// signal twice at once (a process-group delivery seen by launcher and run) is one, a different
// second signal still forces the exit, and a run whose launcher dies by SIGKILL ends as on SIGTERM;
// an owner's work is interrupted and its end awaited before the exit, and a standard stream whose
// reader is gone (EPIPE, as EIO on a closed terminal) never changes the exit code (issue 41, a41d).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const REPO = new URL("../..", import.meta.url).pathname;
const STOP_MS = 1_500;

/** A process that owns its signals and has one live thing whose stop takes STOP_MS, then marks `dir`/stopped. */
function program(dir: string): string {
  return `
import { writeFileSync } from "node:fs";
import { ownSignals, trackLive } from "${REPO}runner/sandbox/live.ts";
import { watchLauncher } from "${REPO}runner/cli/launcher.ts";
process.on("exit", (code) => writeFileSync("${dir}/code", String(code)));
if (process.env.SCIFI_LAUNCHER_PID) watchLauncher(process.env.SCIFI_LAUNCHER_PID);
writeFileSync("${dir}/env", String(process.env.SCIFI_LAUNCHER_PID ?? "removed"));
ownSignals();
trackLive({ runId: "r", stop: () => new Promise((done) => setTimeout(() => { writeFileSync("${dir}/stopped", "1"); done(); }, ${STOP_MS})) });
setInterval(() => {}, 1 << 30);
writeFileSync("${dir}/ready", "1");
`;
}

async function until(what: string, ms: number, test: () => boolean): Promise<number> {
  const start = Date.now();
  while (!test()) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Date.now() - start;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts the program under this Node (>= 22.18) and waits until it is ready. */
async function start(): Promise<{
  dir: string;
  child: ReturnType<typeof spawn>;
  exited: Promise<number | null>;
}> {
  const dir = mkdtempSync(join(tmpdir(), "scifi-live-signals-"));
  const child = spawn(process.execPath, ["--input-type=module", "-e", program(dir)], { stdio: "inherit" });
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  await until("ready", 10_000, () => existsSync(join(dir, "ready")));
  return { dir, child, exited };
}

describe("signals end a run (live.ts)", { timeout: 30_000 }, () => {
  it.each([
    ["SIGHUP", 129],
    ["SIGTERM", 143],
    ["SIGINT", 130],
  ] as const)("%s: the live thing is stopped, then exit %i", async (signal, code) => {
    const { dir, child, exited } = await start();
    child.kill(signal);
    expect(await exited).toBe(code);
    expect(existsSync(join(dir, "stopped"))).toBe(true);
  });

  it("the same signal twice at once is one delivery: the stop still completes", async () => {
    const { dir, child, exited } = await start();
    child.kill("SIGTERM");
    await sleep(100);
    child.kill("SIGTERM");
    expect(await exited).toBe(143);
    expect(existsSync(join(dir, "stopped"))).toBe(true);
  });

  it("a different second signal forces the exit at once, before the stop completes", async () => {
    const { dir, child, exited } = await start();
    child.kill("SIGTERM");
    await sleep(300);
    child.kill("SIGINT");
    expect(await exited).toBe(130);
    expect(existsSync(join(dir, "stopped"))).toBe(false);
  });
});

/**
 * A process whose owner's work ends WORK_MS after its interrupt (marking `dir`/finished, as a run's
 * own exit would), with a live thing that stops at once; the owner announces on stderr.
 */
const WORK_MS = 1_500;
function interruptedProgram(dir: string): string {
  return `
import { writeFileSync } from "node:fs";
import { ownSignals, trackLive } from "${REPO}runner/sandbox/live.ts";
process.on("exit", (code) => writeFileSync("${dir}/code", String(code)));
let end = () => {};
const work = new Promise((done) => { end = done; });
ownSignals({
  interrupt: (signal) => {
    writeFileSync("${dir}/interrupted", signal);
    setTimeout(() => { writeFileSync("${dir}/finished", "1"); end(); }, ${WORK_MS});
    return work;
  },
  announce: (signal) => { process.stderr.write("announced " + signal + "\\n".repeat(4096)); },
});
trackLive({ runId: "r", stop: async () => { writeFileSync("${dir}/stopped", "1"); } });
setInterval(() => {}, 1 << 30);
writeFileSync("${dir}/ready", "1");
`;
}

describe("a signal interrupts the owner's work and waits for its end (live.ts)", { timeout: 30_000 }, () => {
  it("SIGTERM: the work is interrupted, the live thing stopped, and the exit waits for the work's end", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-live-interrupt-"));
    const child = spawn(process.execPath, ["--input-type=module", "-e", interruptedProgram(dir)], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr?.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    await until("ready", 10_000, () => existsSync(join(dir, "ready")));
    const sent = Date.now();
    child.kill("SIGTERM");
    expect(await exited).toBe(143);
    expect(Date.now() - sent).toBeGreaterThanOrEqual(WORK_MS - 100);
    expect(readFileSync(join(dir, "interrupted"), "utf8")).toBe("SIGTERM");
    expect(existsSync(join(dir, "finished")), "the exit came before the owner's work ended").toBe(true);
    expect(existsSync(join(dir, "stopped"))).toBe(true);
    expect(err).toContain("announced SIGTERM");
  });

  it("SIGHUP with stderr's reader gone (EPIPE): the announcement is dropped, the exit is still 129", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-live-interrupt-"));
    const child = spawn(process.execPath, ["--input-type=module", "-e", interruptedProgram(dir)], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    await until("ready", 10_000, () => existsSync(join(dir, "ready")));
    child.stderr?.destroy(); // the write end's reader is gone: every write fails with EPIPE
    child.kill("SIGHUP");
    expect(await exited).toBe(129);
    expect(existsSync(join(dir, "finished"))).toBe(true);
    expect(readFileSync(join(dir, "code"), "utf8")).toBe("129");
  });
});

describe("a relaunched run watches its launcher (launcher.ts)", { timeout: 30_000 }, () => {
  it("the launcher killed with SIGKILL: the run stops its live thing and exits 143 within seconds", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-launcher-watch-"));
    // sh stands in for bin/scifi.js: the run's parent, named by SCIFI_LAUNCHER_PID.
    const launcher = spawn(
      "sh",
      ["-c", 'SCIFI_LAUNCHER_PID=$$ "$0" --input-type=module -e "$1" & wait', process.execPath, program(dir)],
      { stdio: "inherit" },
    );
    await until("ready", 10_000, () => existsSync(join(dir, "ready")));
    // The variable is gone from the run's environment: what it starts watches no launcher.
    expect(readFileSync(join(dir, "env"), "utf8")).toBe("removed");
    launcher.kill("SIGKILL");
    const tookMs = await until("the run's exit", 10_000, () => existsSync(join(dir, "code")));
    expect(readFileSync(join(dir, "code"), "utf8")).toBe("143");
    expect(existsSync(join(dir, "stopped"))).toBe(true);
    expect(tookMs).toBeLessThan(500 + STOP_MS + 2_000);
  });

  it("a pid that is not its parent (an inherited variable) watches nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-launcher-watch-"));
    const child = spawn(process.execPath, ["--input-type=module", "-e", program(dir)], {
      stdio: "inherit",
      env: { ...process.env, SCIFI_LAUNCHER_PID: "1" },
    });
    await until("ready", 10_000, () => existsSync(join(dir, "ready")));
    await sleep(1_200);
    expect(existsSync(join(dir, "code"))).toBe(false);
    child.kill("SIGKILL");
  });
});
