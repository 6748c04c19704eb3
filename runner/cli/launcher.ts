// The run's half of bin/scifi.js's relaunch (issue 41): on a system Node older than 22.18 the
// launcher runs scifi as its child under Node 24 and passes SIGTERM/SIGINT/SIGHUP on. A launcher
// killed with SIGKILL can pass nothing on: the child sees its parent change (it is re-parented to
// init or a subreaper) and ends itself as a SIGTERM would end it (sandbox/live.ts: sandboxes
// stopped, exit 143). A parent pid never comes back once gone, so pid reuse cannot fool this.

/** How often the child looks at its parent, in ms (the SIGKILL-to-stop bound is this plus the cleanup). */
export const LAUNCHER_POLL_MS = 500;

/**
 * Watches the launcher whose pid `launcherPid` names (env SCIFI_LAUNCHER_PID). The variable is
 * removed from the environment first, so processes this one starts (daemon workers, hooks,
 * sandboxes) never watch a parent they do not have. An unrelated parent (the variable inherited by
 * accident) watches nothing.
 */
export function watchLauncher(launcherPid: string): void {
  delete process.env.SCIFI_LAUNCHER_PID;
  if (!/^\d+$/.test(launcherPid)) return;
  if (Number(launcherPid) !== process.ppid) {
    // Not our parent: a live process is one the variable was inherited from by accident; a gone one
    // is the launcher itself, killed before this process first looked (its first milliseconds).
    if (alive(Number(launcherPid))) return;
    launcherGone(Number(launcherPid));
    return;
  }
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    launcherGone(parent);
  }, LAUNCHER_POLL_MS);
  // The watch never keeps the process alive: a finished run ends by itself (issue 32).
  timer.unref();
}

function launcherGone(pid: number): void {
  process.stderr.write(`\nscifi: the launcher (pid ${pid}) is gone: ending the run as on SIGTERM\n`);
  process.kill(process.pid, "SIGTERM");
}

/** Whether a process with this pid exists (EPERM: it does, another user's). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
