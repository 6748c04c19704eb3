// Attacker a41d (issue 41, signals): the terminal of a `scifi run` is closed (an ssh session drops,
// a terminal window is closed) while its work runs. Real Docker, a real pty (python3's pty module:
// Node has none), a scripted model (labelled scripted).
//
// Doc promise: docs/loop.md: "On SIGINT/SIGTERM/SIGHUP `scifi run` stops every live sandbox ...
// and exits 130/143/129"; runner/sandbox/live.ts: "a terminal's hangup as well: its sandboxes must
// not outlive it"; README: the same under the launcher (a relaunch on an older Node).
// What happened (measured): the kernel's hangup sends SIGHUP and from then on every write to the
// terminal fails with EIO. The run's signal announcement (runner/cli/commands/run.ts ownSignals:
// "SIGHUP: stopping the sandbox; continue with ...") is written to the dead terminal first: write
// EIO is thrown as an uncaught exception out of live.ts onSignal, and the process exits 1 (the
// code of a failed run) at once, before the asynchronous stop; only the synchronous best effort at
// 'exit' removed the container. Under the launcher (system Node 20) the launcher itself dies of
// SIGABRT (status -6, "Aborted"), not 129.
// Fixed (fix41-signals): a write to stdout/stderr never ends the run (runner/std-streams.ts: an
// 'error' listener on both, installed with the signal handlers in sandbox/live.ts; the announcement
// comes after the stop began and is written quietly). Node 20's launcher aborted in its terminal
// reset at exit (tcsetattr fails with EIO on a hung-up terminal, a CHECK in Node's ResetStdio):
// after a SIGHUP bin/scifi.js closes its standard descriptors before it exits, so nothing is reset.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CLI } from "../attack/a41-run.ts";
import { containers, HANGUP, script, workspace } from "../attack/a41d-run.ts";
import { hasEngine } from "../helpers/engines.ts";

const OLD_NODE = process.env.SCIFI_OLD_NODE ?? "/usr/bin/node";

describe.skipIf(!hasEngine("docker"))(
  "a41d: a closed terminal ends `scifi run` as SIGHUP (docker)",
  { timeout: 180_000 },
  () => {
    it.each([
      ["Node 24 directly", process.execPath],
      ["the launcher on the system's old Node", OLD_NODE],
    ])("%s: exit 129, the sandbox gone", (_how, node) => {
      if (!existsSync(node)) throw new Error(`no ${node}`);
      const ws = workspace();
      const code = execFileSync(
        "python3",
        [
          "-c",
          HANGUP,
          "phase work",
          "4",
          node,
          CLI,
          "run",
          ws.taskDir,
          "--model",
          `scripted:${script({ workSec: 240 })}`,
          "--backend",
          "docker",
        ],
        { env: { ...process.env, SCIFI_HOME: ws.home }, encoding: "utf8", timeout: 150_000 },
      ).trim();
      execFileSync("sleep", ["3"]);
      expect(containers(ws.home)).toBe("");
      expect(code, "the exit code of the process on the closed terminal").toBe("129");
    });
  },
);
